import t, { type Test } from 'tap'
import { connect, type AddressInfo } from 'node:net'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'
import { otlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { rpc } from '../helpers/rpc.js'
import { Type } from '@sinclair/typebox'

const SERVER = 2
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function traced(t: Test, options: Partial<Parameters<typeof buildServer>[0]> = {}) {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const mcp = createDemoServer({ taskStepMs: 5 })
  mcp.tool({ name: 'boom', description: 'Always fails.', input: Type.Object({}) }, () => {
    throw new Error('it broke')
  })
  const app = await buildServer({
    logger: false,
    mcp,
    telemetry: { traces: true, serviceName: 'telemetry-test', env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } },
    ...options
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) }
  }
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(base + path, { headers })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) }
  }
  // Closing the server shuts the SDK down, which exports every span still batched.
  const spans = async (): Promise<ReceivedSpan[]> => {
    await app.close()
    return receiver.spans
  }
  return { app, post, get, spans, receiver }
}

t.test('a tool call on Pure HTTP: one SERVER span by the MCP conventions, parent from _meta, store spans its children', async (t) => {
  const { post, spans, receiver } = await traced(t)
  const parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
  const transport = '00-11111111111111111111111111111111-2222222222222222-01'
  const res = await post('/tools/echo/calls', { arguments: { text: 'secret words' }, _meta: { traceparent: parent } }, { traceparent: transport, 'mcp-request-id': 'req-7' })
  t.equal(res.status, 200)
  const all = await spans()
  t.match(receiver.posts[0], /^POST \/v1\/traces application\/x-protobuf/, 'the real OTLP/HTTP exporter posted to the receiver, in the default http/protobuf')
  const call = all.find((s) => s.name === 'tools/call echo')!
  t.ok(call, 'named {mcp.method.name} {target}')
  t.equal(call.kind, SERVER)
  t.equal(call.service, 'telemetry-test')
  t.equal(call.traceId, '4bf92f3577b34da6a3ce929d0e0e4736', 'the traceparent in _meta is the parent, not the HTTP header')
  t.equal(call.parentSpanId, '00f067aa0ba902b7')
  t.match(call.links, [{ traceId: '11111111111111111111111111111111', spanId: '2222222222222222', attributes: { 'mcp_pure_http.link': 'http' } }], 'the transport context is a link')
  t.match(call.attributes, {
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.name': 'echo',
    'gen_ai.operation.name': 'execute_tool',
    'jsonrpc.request.id': 'req-7',
    'mcp.protocol.version': '2026-07-28',
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'network.protocol.version': '1.1',
    'client.address': '127.0.0.1',
    'http.response.status_code': 200,
    'mcp_pure_http.result_type': 'complete'
  })
  t.type(call.attributes['client.port'], 'number')
  t.notOk('error.type' in call.attributes, 'no error.type on success')
  t.notOk(JSON.stringify(all).includes('secret words'), 'no argument or result content anywhere')
  const children = all.filter((s) => s.parentSpanId === call.spanId)
  t.ok(children.length > 0, 'store round trips are children of the call')
  t.ok(children.every((s) => s.name.startsWith('store ') && s.traceId === call.traceId))
})

t.test('errors: a JSON-RPC error and a tool error are recorded by the conventions', async (t) => {
  const { post, get, spans } = await traced(t)
  t.equal((await post('/tools/nope/calls', { arguments: {} })).status, 404)
  t.equal((await post('/tools/boom/calls', { arguments: {} })).body.isError, true)
  t.equal((await get('/prompts')).status, 200)
  const all = await spans()
  const unknown = all.find((s) => s.name === 'tools/call nope')!
  t.match(unknown.attributes, { 'error.type': '-32602', 'rpc.response.status_code': '-32602', 'http.response.status_code': 404 })
  t.equal(unknown.status.code, 2, 'status ERROR')
  t.match(unknown.status.message, /nope/, 'with the JSON-RPC error message')
  const failed = all.find((s) => s.name === 'tools/call boom')!
  t.equal(failed.attributes['error.type'], 'tool_error')
  t.notOk('rpc.response.status_code' in failed.attributes, 'no JSON-RPC error code: the call answered')
  t.equal(failed.status.code, 2)
  const list = all.find((s) => s.name === 'prompts/list')!
  t.equal(list.kind, SERVER)
  t.notOk(list.parentSpanId, 'a root span without any trace context')
})

t.test('a call refused before its handler (the rate limit) has its span too', async (t) => {
  const { post, spans } = await traced(t, { rateLimit: { max: 1, timeWindowMs: 60_000 } })
  t.equal((await post('/tools/echo/calls', { arguments: { text: 'a' } })).status, 200)
  t.equal((await post('/tools/echo/calls', { arguments: { text: 'b' } })).status, 429)
  const calls = (await spans()).filter((s) => s.name === 'tools/call echo')
  t.equal(calls.length, 2, 'one span for each call, the refused one included')
  const refused = calls.find((s) => s.attributes['http.response.status_code'] === 429)!
  t.match(refused.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo' })
  t.ok(refused.attributes['error.type'] !== undefined, 'with its error')
  t.equal(refused.status.code, 2, 'status ERROR')
})

t.test('an MRTR round trip over two requests: the second links to the first', async (t) => {
  const { post, spans } = await traced(t)
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }
  const first = await post('/tools/get_weather/calls', { arguments: {}, _meta: meta })
  t.equal(first.body.resultType, 'input_required')
  const key = Object.keys(first.body.inputRequests)[0]!
  const second = await post('/tools/get_weather/calls', {
    arguments: {},
    _meta: meta,
    requestState: first.body.requestState,
    inputResponses: { [key]: { action: 'accept', content: { location: 'Oslo' } } }
  })
  t.equal(second.body.resultType, 'complete')
  const calls = (await spans()).filter((s) => s.name === 'tools/call get_weather')
  t.equal(calls.length, 2)
  const [a, b] = calls as [ReceivedSpan, ReceivedSpan]
  t.equal(a.attributes['mcp_pure_http.result_type'], 'input_required')
  t.notOk(a.links.length, 'the first round links nowhere')
  t.same(b.links.map((l) => [l.traceId, l.spanId, l.attributes['mcp_pure_http.link']]), [[a.traceId, a.spanId, 'mrtr']])
  t.equal(b.attributes['mcp_pure_http.mrtr.round'], 2)
})

t.test('a task and its polls on /mcp: each poll a SERVER span linked to the call', async (t) => {
  const { app, spans } = await traced(t)
  const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } }
  const created = await rpc(app, 'tools/call', { name: 'slow_compute', arguments: { n: 2 } }, { caps, id: 1 })
  const taskId = created.body.result.taskId as string
  t.ok(taskId, created)
  let status = 'working'
  for (let i = 2; status === 'working' && i < 200; i++) {
    const polled = await rpc(app, 'tasks/get', { taskId }, { caps, id: i, headers: { 'mcp-name': taskId } })
    status = polled.body.result.status
    if (status === 'working') await sleep(5)
  }
  t.equal(status, 'completed')
  const all = await spans()
  const call = all.find((s) => s.name === 'tools/call slow_compute')!
  t.match(call.attributes, { 'jsonrpc.request.id': '1', 'mcp_pure_http.result_type': 'task', 'mcp_pure_http.task.id': taskId })
  const polls = all.filter((s) => s.name === 'tasks/get')
  t.ok(polls.length >= 1)
  for (const p of polls) {
    t.equal(p.kind, SERVER)
    t.match(p.attributes, { 'mcp.method.name': 'tasks/get', 'mcp_pure_http.task.id': taskId })
    t.same(p.links.map((l) => [l.spanId, l.attributes['mcp_pure_http.link']]), [[call.spanId, 'task']])
  }
})

t.test('OTEL_EXPORTER_OTLP_PROTOCOL: http/json on request, per signal too; grpc refused at start', async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  for (const env of [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'HTTP/JSON' }]) {
    const app = await buildServer({ logger: false, mcp: createDemoServer(), telemetry: { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...env } } })
    await app.inject({ method: 'POST', url: '/tools/echo/calls', headers: { 'content-type': 'application/json' }, payload: { arguments: { text: 'x' } } })
    await app.close()
  }
  t.same(receiver.posts.map((p) => p.split(' ')[2]), ['application/json', 'application/json'])
  t.ok(receiver.spans.filter((s) => s.name === 'tools/call echo').length === 2, 'decoded the same')
  await t.rejects(
    buildServer({ logger: false, mcp: createDemoServer(), telemetry: { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } } }),
    { name: 'ConfigurationError', message: 'OTEL_EXPORTER_OTLP_PROTOCOL="grpc": this server exports OTLP over HTTP only: use http/protobuf (the default) or http/json' }
  )
  await t.rejects(
    buildServer({ logger: false, mcp: createDemoServer(), telemetry: { env: { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'thrift' } } }),
    { message: /^OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="thrift"/ }
  )
})

t.test('log lines written while a span is active carry its trace_id and span_id; others none', async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const lines: Record<string, unknown>[] = []
  const mcp = createDemoServer()
  mcp.tool({ name: 'noted', description: 'Logs a line.', input: Type.Object({}) }, (_args, ctx) => {
    ctx.log.info('inside the tool')
    return 'ok'
  })
  const app = await buildServer({
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } } as never,
    mcp,
    telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } }
  })
  await app.inject({ method: 'POST', url: '/tools/noted/calls', headers: { 'content-type': 'application/json' }, payload: { arguments: {} } })
  await app.close()
  const span = receiver.spans.find((s) => s.name === 'tools/call noted')!
  const inside = lines.find((l) => l.msg === 'inside the tool')!
  t.match(inside, { trace_id: span.traceId, span_id: span.spanId, trace_flags: '01' }, "the tool's log line names the request's span")
  const outside = lines.find((l) => l.msg === 'incoming request')
  t.ok(outside !== undefined && !('trace_id' in outside), 'Fastify\'s line before the span starts has none')
})

t.test("a log line's fields never reach another line (pino merges them into the mixin's object)", async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const lines: Record<string, unknown>[] = []
  const app = await buildServer({
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } } as never,
    mcp: createDemoServer(),
    telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } }
  })
  t.teardown(() => app.close())
  app.log.info({ reason: 'one request\'s reason', tool: 'its tool' }, 'first line, outside any span')
  app.log.info('second line')
  await app.inject({ method: 'GET', url: '/tools' })
  await app.inject({ method: 'GET', url: '/tools' })
  const second = lines.find((l) => l.msg === 'second line')!
  t.notOk('reason' in second || 'tool' in second, 'the next line has none of the first one\'s fields')
  const incoming = lines.filter((l) => l.msg === 'incoming request')
  t.equal(incoming.length, 2)
  t.notOk('responseTime' in incoming[1]! || 'reason' in incoming[1]!, "the second request's first line has nothing of the first request's lines")
  t.not((incoming[1]!.req as { id?: unknown } | undefined)?.id ?? incoming[1]!.reqId, incoming[0]!.reqId, 'and its own request id')
})

t.test('a session names its span (mcp.session.id)', async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const app = await buildServer({ logger: false, mcp: createDemoServer(), sessions: true, telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } } })
  const legacy = { 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' }
  const init = await app.inject({ method: 'POST', url: '/initialize', headers: legacy, payload: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } })
  const session = init.headers['mcp-session-id'] as string
  t.ok(session, 'a session was issued')
  await app.inject({ method: 'POST', url: '/tools/echo/calls', headers: { ...legacy, 'mcp-session-id': session }, payload: { arguments: { text: 'x' } } })
  await app.close()
  t.equal(receiver.spans.find((s) => s.name === 'tools/call echo')!.attributes['mcp.session.id'], session)
})

t.test('under a prefix: each route is named by its MCP method from registration; routes that are not MCP methods have no span', async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const app = await buildServer({ logger: false, mcp: createDemoServer(), prefix: '/api/mcp', telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } } })
  const json = { 'content-type': 'application/json' }
  t.equal((await app.inject({ method: 'POST', url: '/api/mcp/tools/echo/calls', headers: json, payload: { arguments: { text: 'x' } } })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/api/mcp/prompts/greeting', headers: { 'mcp-arguments': '{"name":"Ada"}' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/api/mcp/mcp', headers: { ...json, accept: 'application/json, text/event-stream' }, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/api/mcp/openapi.json' })).statusCode, 200)
  await app.close()
  t.same(receiver.spans.map((s) => s.name).sort(), ['prompts/get greeting', 'tools/call echo', 'tools/list'], 'the two faces under the prefix; the OpenAPI document is not an MCP method')
})

t.test('a call whose client went away mid-handler: its span ends as aborted, and requests.active falls back', async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const mcp = createDemoServer()
  let started!: () => void
  const running = new Promise<void>((resolve) => (started = resolve))
  let stopped!: () => void
  const ended = new Promise<void>((resolve) => (stopped = resolve))
  mcp.tool({ name: 'forever', description: 'Runs until it is cancelled.', input: Type.Object({}) }, async (_args, ctx) => {
    started()
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
    stopped()
    return 'cancelled'
  })
  const app = await buildServer({ logger: false, mcp, telemetry: { traces: true, metrics: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  const body = JSON.stringify({ arguments: {} })
  const socket = connect(port, '127.0.0.1', () => socket.write(`POST /tools/forever/calls HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`))
  await running
  socket.destroy()
  await ended
  const active = async () => /^mcp_pure_http_requests_active(?:\{[^}]*\})? (\d+)/m.exec((await app.inject({ url: '/metrics' })).payload)?.[1]
  for (let i = 0; i < 200 && (await active()) !== '0'; i++) await sleep(5)
  t.equal(await active(), '0', 'the gauge is back to zero')
  await app.close()
  const span = receiver.spans.find((s) => s.name === 'tools/call forever')
  t.ok(span, 'the span was ended and exported')
  t.equal(span?.attributes['error.type'], 'aborted')
  t.notOk(span !== undefined && 'http.response.status_code' in span.attributes, 'no response was sent')
})
