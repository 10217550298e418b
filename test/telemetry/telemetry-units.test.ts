import t from 'tap'
import { createNoopMeter } from '@opentelemetry/api'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'
import type { Store } from '../../src/store/types.js'
import { histograms, instruments } from '../../src/telemetry/metrics.js'
import { settleTelemetry, telemetryFromConfig, tracesWanted } from '../../src/telemetry/options.js'
import { errorType, observedStore } from '../../src/telemetry/store.js'
import { jsonRpcOperation, routeMethods } from '../../src/telemetry/operation.js'
import { observeDeliveries, reportDelivery, type DeliveryEvent } from '../../src/webhooks/observe.js'
import { observeWebhooks } from '../../src/telemetry/webhooks.js'
import { TaskLinks, spanContextOf } from '../../src/telemetry/links.js'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { otlpReceiver } from '../helpers/otlp-receiver.js'

t.test('what turns telemetry on', async (t) => {
  t.equal(settleTelemetry(undefined, {}), undefined, 'nothing configured: off')
  t.equal(settleTelemetry(false, { OTEL_TRACES_EXPORTER: 'otlp' }), undefined, 'false wins over the variables')
  t.match(settleTelemetry(true, {}), { traces: true, metrics: false, serviceName: 'mcp-pure-http' })
  t.equal(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true)
  t.equal(tracesWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true)
  t.equal(tracesWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }), false, 'none keeps traces off')
  t.equal(tracesWanted({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }), false, 'the SDK disabled')
  t.equal(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }), false, 'a blank value is no setting')
  t.match(settleTelemetry(undefined, { OTEL_METRICS_EXPORTER: 'console, otlp' }), { traces: false, otlpMetrics: true })
  t.equal(settleTelemetry(undefined, { OTEL_METRICS_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'TRUE' }), undefined)
  t.same(telemetryFromConfig({ HOST: '0.0.0.0', MCP_METRICS: 'false', MCP_METRICS_PORT: 9464 }), {})
  t.throws(() => settleTelemetry(true, { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="grpc": this server exports OTLP over HTTP only/)
  t.match(settleTelemetry(true, { OTEL_TRACES_EXPORTER: 'console', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }), { traces: true }, 'console traces: no OTLP protocol to check')
  t.same(telemetryFromConfig({ HOST: '0.0.0.0', MCP_METRICS: 'true', MCP_METRICS_PORT: 0 }), { metrics: true })
  t.same(telemetryFromConfig({ HOST: '0.0.0.0', MCP_METRICS: 'true', MCP_METRICS_PORT: 9464 }), { metrics: { port: 9464, host: '0.0.0.0' } })
})

/** A store whose every role is one object (`observedStore` looks at the store's class for its kind). */
class FakeStore {
  readonly companions = {}
  constructor(readonly connections: object, readonly mailbox = connections, readonly signals = connections, readonly tasks = connections, readonly idempotency = connections) {}
  async ping(): Promise<void> {}
  async close(): Promise<void> {}
}

t.test('the observed store: failures counted by type, results passed through, its own this kept', async (t) => {
  class RedisLike {
    readonly #secret = 'own field'
    calls = 0
    sync(): string {
      return this.#secret
    }

    async fails(): Promise<void> {
      throw Object.assign(new Error('full'), { code: 'QUEUE_FULL' })
    }

    throwsAtOnce(): void {
      throw new TypeError('bad')
    }

    onCancel(): string {
      return this.#secret
    }

    async updateTask(_o: string, _id: string, patch: { status?: string }): Promise<unknown> {
      return patch.status === 'gone' ? undefined : { status: patch.status }
    }

    async ackNotifications(): Promise<boolean> {
      return true
    }
  }
  const store = observedStore(new FakeStore(new RedisLike()) as unknown as Store, undefined, instruments(createNoopMeter()))
  const role = store.tasks as unknown as RedisLike
  t.ok(store instanceof FakeStore, 'instanceof sees through')
  t.ok(role instanceof RedisLike, 'and through a role')
  t.equal(store.mailbox, store.tasks, 'one object in two roles is wrapped once')
  t.equal(role.sync(), 'own field', 'a plain value, the private field reached')
  t.equal((store.signals as unknown as RedisLike).onCancel(), 'own field', 'listeners run on the role itself')
  t.equal(role.sync, role.sync, 'one wrapper per method')
  t.equal(role.calls, 0, 'other properties as they are')
  await t.rejects(role.fails(), { code: 'QUEUE_FULL' })
  t.throws(() => role.throwsAtOnce(), TypeError)
  t.same(await role.updateTask('o', 't', { status: 'completed' }), { status: 'completed' })
  t.equal(await role.updateTask('o', 't', { status: 'gone' }), undefined)
  t.equal(await role.ackNotifications(), true, 'an unknown group takes nothing off')
  t.equal(errorType(Object.assign(new Error('x'), { code: 'E_X' })), 'E_X')
  t.equal(errorType(new RangeError('x')), 'RangeError')
  t.equal(errorType('a string'), '_OTHER')
})

t.test('prompts, reads and Mcp-Meta parents; OTLP metrics pushed on shutdown', async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const app = await buildServer({
    logger: false,
    mcp: createDemoServer(),
    telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`, OTEL_METRICS_EXPORTER: 'otlp' } }
  })
  const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
  const read = await app.inject({ url: `/resources/${encodeURIComponent('demo://readme')}`, headers: { 'mcp-meta': JSON.stringify({ traceparent: parent }) } })
  t.equal(read.statusCode, 200)
  const prompt = await app.inject({ method: 'POST', url: '/prompts/greeting', payload: { arguments: { name: 'Ada' } } })
  t.equal(prompt.statusCode, 200, prompt.payload)
  t.equal((await app.inject({ url: '/tools', headers: { 'mcp-meta': '{not json' } })).statusCode, 400, 'a bad Mcp-Meta is the route\'s to refuse')
  await app.close()
  const spans = receiver.spans
  const readSpan = spans.find((s) => s.name === 'resources/read')!
  t.match(readSpan, { traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: 'b7ad6b7169203331' }, 'the traceparent in Mcp-Meta is the parent')
  t.match(readSpan.attributes, { 'mcp.resource.uri': 'demo://readme', 'mcp_pure_http.result_type': 'complete' })
  t.match(spans.find((s) => s.name === 'prompts/get greeting')?.attributes, { 'gen_ai.prompt.name': 'greeting', 'mcp_pure_http.result_type': 'complete' })
  t.match(spans.find((s) => s.name === 'tools/list')?.attributes, { 'error.type': '-32602' })
  t.ok(receiver.posts.some((p) => p.startsWith('POST /v1/metrics')), 'the metrics went out over OTLP too')
})

t.test('what a JSON-RPC message says for the span and the metric', async (t) => {
  t.equal(jsonRpcOperation('not an object'), undefined)
  t.same(jsonRpcOperation({ jsonrpc: '2.0', id: 7, result: {} }), { method: 'requests/answer', requestId: '7' }, "a client's answer")
  t.equal(jsonRpcOperation({ jsonrpc: '2.0', result: {} }), undefined, 'an answer without an id is nothing')
  t.equal(jsonRpcOperation({ jsonrpc: '2.0', id: 1, method: '' }), undefined)
  t.equal(jsonRpcOperation({ jsonrpc: '2.0', id: 1, method: 42 }), undefined)
  t.same(jsonRpcOperation({ jsonrpc: '2.0', id: 'a', method: 'prompts/get', params: { name: 'greeting' } }), { method: 'prompts/get', requestId: 'a', target: 'greeting', prompt: 'greeting' })
  t.same(jsonRpcOperation({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'demo://readme' } }), { method: 'notifications/resources/updated', uri: 'demo://readme' })
  t.same(jsonRpcOperation({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: 't1', _meta: { traceparent: 'x' } } }), { method: 'tasks/get', requestId: '2', taskId: 't1', meta: { traceparent: 'x' } })
  t.same(jsonRpcOperation({ jsonrpc: '2.0', id: 3, method: 'ping', params: 'odd' }), { method: 'ping', requestId: '3' }, 'params that are not an object are none')
  t.equal(jsonRpcOperation({ jsonrpc: '2.0', id: 4, method: 'x'.repeat(500) })!.method.length, 128, 'a method name is bounded')
  t.same(jsonRpcOperation({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 7 } }), { method: 'tools/call', requestId: '5', target: undefined, tool: undefined }, 'a name that is not a string names nothing')
})

t.test("a route's MCP method, worked out when the route is registered", async (t) => {
  t.same(routeMethods('/x/tools/:name/calls', 'POST', '/x'), { POST: 'tools/call' })
  t.same(routeMethods('/prompts/:name', ['GET', 'POST', 'DELETE'], ''), { GET: 'prompts/get', POST: 'prompts/get' }, 'each HTTP method of a route by itself; one that is not an MCP method is left out')
  t.equal(routeMethods('/other/tools', 'GET', '/x'), undefined, 'outside the prefix')
  t.equal(routeMethods('/x/openapi.json', 'GET', '/x'), undefined, 'not an MCP method')
  t.same(routeMethods('/tools', 'get', ''), { GET: 'tools/list' }, 'a method given in lower case')
})

t.test('a delivery observer that throws does not disturb the others', async (t) => {
  const heard: string[] = []
  const stopBad = observeDeliveries(() => {
    throw new Error('observer bug')
  })
  const stopGood = observeDeliveries((e) => void heard.push(e.messageId))
  const event = { webhookId: 'wh', messageId: 'msg_1', attempt: 1, url: 'http://127.0.0.1/x', startedAt: 0, durationMs: 1, responseStatus: 200, error: undefined, outcome: 'delivered' as const, body: '{}' }
  reportDelivery(event)
  stopBad()
  stopGood()
  reportDelivery(event)
  t.same(heard, ['msg_1'], 'heard once, before it stopped listening')
})

t.test('a delivery span: the default port of its scheme, why it failed, and a task link only for a task it knows', async (t) => {
  const exporter = new InMemorySpanExporter()
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test')
  const counted: string[] = []
  const m = { ...instruments(createNoopMeter()), webhookDeliveries: { add: (_n: number, a: Record<string, string>) => void counted.push(a['mcp_pure_http.webhook.outcome']!) } }
  const tasks = new TaskLinks()
  const known = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 }
  tasks.set('task-known', known)
  const stop = observeWebhooks(tracer, m as never, tasks)
  t.teardown(stop)
  const base: DeliveryEvent = { webhookId: 'wh', messageId: 'msg', attempt: 1, url: 'https://hooks.example/x', startedAt: 1_000, durationMs: 5, responseStatus: undefined, error: 'socket hang up', outcome: 'retrying', body: '{}' }
  const task = (taskId: unknown) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks', params: { taskId } })
  reportDelivery(base)
  reportDelivery({ ...base, url: 'http://hooks.example/x', error: undefined, outcome: 'returned' })
  reportDelivery({ ...base, url: 'http://hooks.example:8080/x', responseStatus: 200, error: undefined, outcome: 'delivered', body: task('task-known') })
  reportDelivery({ ...base, responseStatus: 200, error: undefined, outcome: 'delivered', body: task('task-unknown') })
  reportDelivery({ ...base, responseStatus: 200, error: undefined, outcome: 'delivered', body: task(42) })
  const spans = exporter.getFinishedSpans()
  t.same(spans.map((s) => s.attributes['server.port']), [443, 80, 8080, 443, 443], 'the port of the URL, else its scheme default')
  t.same(spans.map((s) => s.attributes['error.type'] ?? null), ['_OTHER', '_OTHER', null, null, null], 'no answer and not a timeout: _OTHER')
  t.same(spans.map((s) => s.status.message ?? null), ['socket hang up', null, null, null, null], 'the error as the status message, when there is one')
  t.same(spans.map((s) => s.links.length), [0, 0, 1, 0, 0], 'linked only to a task call this instance saw')
  t.same(spans[2]!.links[0]!.context, known)
  t.same(counted, ['retrying', 'returned', 'delivered', 'delivered', 'delivered'])

  // Metrics only (no traces): counted, no span.
  stop()
  const stopCounting = observeWebhooks(undefined, m as never, tasks)
  t.teardown(stopCounting)
  reportDelivery(base)
  t.equal(exporter.getFinishedSpans().length, 5, 'no span without a tracer')
  t.equal(counted.length, 6, 'but counted')
})

t.test('queue and task counters follow the calls that change them', async (t) => {
  const added: Record<string, number> = {}
  const counter = (name: string) => ({ add: (n: number) => void (added[name] = (added[name] ?? 0) + n) })
  const m = { ...instruments(createNoopMeter()), notificationsQueued: counter('queued'), tasks: counter('tasks'), requestsQueued: counter('requests') }
  let group: { id: string; notifications: unknown[] } | undefined
  let n = 0
  class MemoryLike {
    async takeNotifications(): Promise<unknown> {
      return group
    }

    async ackNotifications(_owner: string, _group: string): Promise<boolean> {
      return true
    }

    async enqueueRequest(): Promise<void> {}

    async completeRequest(_owner: string, id: string): Promise<boolean> {
      return id === 'known'
    }

    async updateTask(_o: string, _id: string, _patch: object): Promise<unknown> {
      return { n: ++n }
    }
  }
  const store = observedStore(new FakeStore(new MemoryLike()) as unknown as Store, undefined, m as never).mailbox as unknown as MemoryLike
  await store.takeNotifications()
  await store.ackNotifications('me', 'g0')
  t.same(added, {}, 'nothing handed out: nothing taken off')
  for (let i = 0; i <= 10_000; i++) {
    group = { id: `g${i}`, notifications: [1, 2] }
    await store.takeNotifications()
  }
  await store.ackNotifications('me', 'g0')
  await store.ackNotifications('me', 'g10000')
  t.same(added, { queued: -2 }, 'the sizes of 10,000 groups are kept: the oldest is forgotten')
  await store.updateTask('o', 't', { pollInterval: 5 })
  t.same(added, { queued: -2 }, 'an update without a status counts no task')
  await store.updateTask('o', 't', { status: 'completed' })
  t.same(added, { queued: -2, tasks: 1 })
  await store.enqueueRequest()
  await store.completeRequest('o', 'unknown')
  t.same(added, { queued: -2, tasks: 1, requests: 1 }, 'a response to no queued request takes nothing off')
  await store.completeRequest('o', 'known')
  t.same(added, { queued: -2, tasks: 1, requests: 0 })
})

t.test('task links: bounded, the oldest forgotten first; a traceparent that is not one links nothing', async (t) => {
  const links = new TaskLinks(2)
  const sc = (n: number) => ({ traceId: String(n).repeat(32), spanId: String(n).repeat(16), traceFlags: 1 })
  links.set('a', sc(1))
  links.set('b', sc(2))
  links.set('c', sc(3))
  t.same([links.get('a'), links.get('b'), links.get('c')], [undefined, sc(2), sc(3)])
  const propagator = new W3CTraceContextPropagator()
  t.match(spanContextOf(propagator, `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`), { traceId: '1'.repeat(32), spanId: '2'.repeat(16) })
  t.equal(spanContextOf(propagator, 'not a traceparent'), undefined)
  t.equal(spanContextOf(propagator, `00-${'0'.repeat(32)}-${'2'.repeat(16)}-01`), undefined, 'an all-zero trace id is invalid')
})

t.test('per-signal endpoints and encodings: each signal goes where and how its own variables say', async (t) => {
  const traces = await otlpReceiver()
  const metrics = await otlpReceiver()
  t.teardown(() => Promise.all([traces.close(), metrics.close()]))
  const app = await buildServer({
    logger: false,
    mcp: createDemoServer(),
    telemetry: {
      traces: true,
      env: {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${traces.url}/custom/traces`,
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${metrics.url}/custom/metrics`,
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json'
      }
    }
  })
  await app.inject({ method: 'POST', url: '/tools/echo/calls', headers: { 'content-type': 'application/json' }, payload: { arguments: { text: 'x' } } })
  await app.close()
  t.same([...new Set(traces.posts)], ['POST /custom/traces application/x-protobuf'], 'traces: the signal\'s own URL as is, protobuf by default')
  t.same([...new Set(metrics.posts)], ['POST /custom/metrics application/json'], 'metrics: their own URL and encoding')
})

t.test('request hooks: a body that is no message, answers that are not JSON or carry no JSON-RPC code, an unknown method', async (t) => {
  const { default: Fastify } = await import('fastify')
  const { AggregationTemporality, MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics')
  const { resourceFromAttributes } = await import('@opentelemetry/resources')
  const { HistogramProducer } = await import('../../src/telemetry/histogram.js')
  const { requestHooks } = await import('../../src/telemetry/hooks.js')
  const { McpServer } = await import('../../src/core/mcp-server.js')
  class Reader extends MetricReader {
    protected override async onForceFlush(): Promise<void> {}
    protected override async onShutdown(): Promise<void> {}
  }
  const own = histograms()
  const reader = new Reader({ metricProducers: [new HistogramProducer([own.duration], resourceFromAttributes({}), 't', AggregationTemporality.CUMULATIVE)] })
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const meter = new MeterProvider({ readers: [reader] }).getMeter('t')
  const kit = { tracer: provider.getTracer('t'), propagator: new W3CTraceContextPropagator(), m: instruments(meter, own), tasks: new TaskLinks() }
  // Our routes always answer JSON; an application's own routes in the same scope need not.
  const app = Fastify()
  requestHooks(app, new McpServer({ name: 'm', version: '1' }), kit)
  app.post('/mcp', { config: { mcpJsonRpc: true } }, async (request, reply) => {
    const body = request.body as { id?: number; method?: string }
    if (body.method === undefined) return reply.code(400).send({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'not a message' } })
    if (body.method === 'text/fail') return reply.code(500).type('text/plain').send('it broke')
    if (body.method === 'plain/fail') return reply.code(400).send({ message: 'no JSON-RPC code' })
    return { jsonrpc: '2.0', id: body.id, result: {} }
  })
  app.post('/tools/:name/calls', async (_request, reply) => reply.type('text/plain').send('text that says "isError":true'))
  t.teardown(() => app.close())
  const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, payload: payload as object })

  t.equal((await post('/mcp', { jsonrpc: '2.0' })).statusCode, 400)
  t.same(exporter.getFinishedSpans(), [], 'a body that is no message is no operation: no span')
  t.equal((await post('/mcp', { jsonrpc: '2.0', id: 1, method: 'text/fail' })).statusCode, 500)
  t.equal((await post('/mcp', { jsonrpc: '2.0', id: 2, method: 'plain/fail' })).statusCode, 400)
  t.equal((await post('/mcp', { jsonrpc: '2.0', id: 3, method: 'made/up' })).statusCode, 200)
  t.equal((await post('/tools/echo/calls', {})).statusCode, 200)
  const spans = new Map(exporter.getFinishedSpans().map((s) => [s.name, s]))
  t.same([...spans.keys()], ['text/fail', 'plain/fail', 'made/up', 'tools/call echo'])
  t.match(spans.get('text/fail')!.attributes, { 'error.type': '500', 'http.response.status_code': 500 }, 'a 5xx that is not JSON: its status is the error type')
  t.equal(spans.get('plain/fail')!.attributes['error.type'], undefined, 'a 4xx without a JSON-RPC code names no error type')
  t.equal(spans.get('tools/call echo')!.attributes['error.type'], undefined, 'a tool answer that is not JSON is no tool_error')

  const { resourceMetrics } = await reader.collect()
  const points = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'mcp.server.operation.duration')!.dataPoints
  const counts = points.map((p) => `${p.attributes['mcp.method.name']} ${p.attributes['error.type'] ?? '-'} ${(p.value as { count: number }).count}`)
  t.same(counts.sort(), ['_OTHER - 2', '_OTHER 500 1', 'tools/call - 1'], 'methods the conventions do not know are _OTHER in the metric')
})

t.test('sealed state outside a served request, or that is not an object, is sealed and opened as is', async (t) => {
  const { McpServer } = await import('../../src/core/mcp-server.js')
  const { observeCore } = await import('../../src/telemetry/core.js')
  const mcp = new McpServer({ name: 'm', version: '1' })
  observeCore(mcp, new W3CTraceContextPropagator(), new TaskLinks())
  const binding = { principal: 'p', method: 'tools/call', target: 't', args: 'a' }
  const log = { warn() {} } as never
  t.same(mcp.sealer.open(mcp.sealer.seal(binding, { step: 1 }), binding, log), { step: 1 }, 'no trace keys added outside a request')
  t.equal(mcp.sealer.open(mcp.sealer.seal(binding, 'text'), binding, log), 'text')
})

t.test('a tool called outside a served request, at once or later: its answer as is, nothing told', async (t) => {
  const { McpServer } = await import('../../src/core/mcp-server.js')
  const { observeCore } = await import('../../src/telemetry/core.js')
  const { coreContext } = await import('../helpers/helper.js')
  const { Type } = await import('@sinclair/typebox')
  const mcp = new McpServer({ name: 'm', version: '1' })
  mcp.tool({ name: 'now', description: 'Answers at once.', input: Type.Object({}) }, () => ({ content: [{ type: 'text' as const, text: 'now' }], isError: true }))
  mcp.tool({ name: 'later', description: 'Answers later.', input: Type.Object({}) }, async () => ({ content: [{ type: 'text' as const, text: 'later' }] }))
  observeCore(mcp, new W3CTraceContextPropagator(), new TaskLinks())
  const now = mcp.callTool('now', { arguments: {} }, coreContext(mcp))
  t.notOk(now instanceof Promise, 'a call answered at once stays at once')
  t.match(await now, { content: [{ text: 'now' }], isError: true })
  t.match(await mcp.callTool('later', { arguments: {} }, coreContext(mcp)), { content: [{ text: 'later' }] })
})

t.test("a W3C carrier's keys are the _meta object's own", async (t) => {
  const { metaGetter } = await import('../../src/telemetry/links.js')
  t.same(metaGetter.keys({ traceparent: 'x', other: 1 }), ['traceparent', 'other'])
})

t.test("store spans inside a request's span: CLIENT with db.system.name for a Redis store, a failure's type and status", async (t) => {
  const { context, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } = await import('@opentelemetry/api')
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks')
  // The SDK registers this once when a server starts with traces; false when it is there already.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  class RedisTestStore extends FakeStore {}
  const role = {
    async getTask() {
      return undefined
    },
    async createTask() {
      throw Object.assign(new Error('Redis is down'), { code: 'STORE_UNAVAILABLE' })
    }
  }
  const exporter = new InMemorySpanExporter()
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('t')
  const store = observedStore(new RedisTestStore(role) as unknown as Store, tracer, instruments(createNoopMeter()))
  const request = tracer.startSpan('request')
  const [read, create] = context.with(trace.setSpan(ROOT_CONTEXT, request), () => [store.tasks.getTask('o', 't'), store.tasks.createTask('o', {} as never)])
  t.equal(await read, undefined)
  await t.rejects(create as Promise<unknown>, { code: 'STORE_UNAVAILABLE' })
  request.end()
  const spans = new Map(exporter.getFinishedSpans().map((s) => [s.name, s]))
  t.match(spans.get('store getTask'), { kind: SpanKind.CLIENT, parentSpanContext: { spanId: request.spanContext().spanId }, attributes: { 'db.system.name': 'redis' } })
  t.match(spans.get('store createTask'), {
    kind: SpanKind.CLIENT,
    attributes: { 'error.type': 'STORE_UNAVAILABLE' },
    status: { code: SpanStatusCode.ERROR, message: 'Redis is down' }
  })
})

t.test("no OTLP endpoint among the server's variables: each exporter's own default (the process' variables, else localhost:4318)", async (t) => {
  // The exporters read the process' OTEL_EXPORTER_OTLP_ENDPOINT when given no URL; a server given
  // variables of its own (the telemetry option's `env`) without an endpoint falls back to that.
  const receiver = await otlpReceiver()
  const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT
  t.teardown(() => {
    if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT
    else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved
    return receiver.close()
  })
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url
  const app = await buildServer({ logger: false, mcp: createDemoServer(), telemetry: { traces: true, env: { OTEL_METRICS_EXPORTER: 'otlp' } } })
  t.equal((await app.inject({ method: 'POST', url: '/tools/echo/calls', payload: { arguments: { text: 'x' } } })).statusCode, 200)
  await app.close()
  t.same([...new Set(receiver.posts)].sort(), ['POST /v1/metrics application/x-protobuf', 'POST /v1/traces application/x-protobuf'])
  t.ok(receiver.spans.some((s) => s.name === 'tools/call echo'))
})

t.test('OTEL_TRACES_EXPORTER=console writes each span to the console', async (t) => {
  const written: unknown[] = []
  const { dir, log } = console
  console.dir = (item: unknown) => void written.push(item)
  console.log = (...items: unknown[]) => void written.push(...items)
  t.teardown(() => Object.assign(console, { dir, log }))
  const app = await buildServer({ logger: false, mcp: createDemoServer(), telemetry: { traces: true, env: { OTEL_TRACES_EXPORTER: ' Console ' } } })
  t.equal((await app.inject({ method: 'POST', url: '/tools/echo/calls', payload: { arguments: { text: 'x' } } })).statusCode, 200)
  await app.close()
  Object.assign(console, { dir, log })
  t.match(written, [{ name: 'tools/call echo', kind: 1, attributes: { 'gen_ai.tool.name': 'echo' } }])
})
