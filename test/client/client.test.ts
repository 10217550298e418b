import t from 'tap'
import { Type } from '@sinclair/typebox'
import { McpHttpError, PureHttpClient, sleep } from '../../src/client/client.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { elicit, sample } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import { MemoryStore } from '../../src/store/memory.js'
import { liveDemo, stub } from '../helpers/client-harness.js'
import { DEMO_TOOLS, queuedRequests } from '../helpers/helper.js'

/** The text of a text block or text contents (the result types are unions of every kind). */
const text = (c: unknown): string => (c as { text: string }).text

const MODERN_META = 'io.modelcontextprotocol/clientCapabilities'

t.test('lists follow cursors and revalidate by ETag; discover, ping, log level, completions, subscriptions', async (t) => {
  const live = await liveDemo(t, { mcp: createDemoServer({ taskStepMs: 20, pageSize: 3 }) })
  const client = new PureHttpClient({ url: `${live.url}/` })
  t.equal(client.url, live.url, 'a trailing slash is dropped')
  const tools = await client.listTools()
  t.same(tools.map((x) => x.name), DEMO_TOOLS)
  const pages = live.seen.filter((s) => s.url.startsWith('/tools')).map((s) => s.status)
  t.same(pages, [200, 200, 200])
  t.same((await client.listTools()).map((x) => x.name), DEMO_TOOLS, 'the same list again')
  t.same(live.seen.filter((s) => s.url.startsWith('/tools')).map((s) => s.status).slice(3), [304, 304, 304], 'revalidated, not refetched')
  t.same((await client.listPrompts()).map((p) => p.name), ['greeting', 'code_review'])
  t.ok((await client.listResources()).some((r) => r.uri === 'demo://numbers'))
  t.same((await client.listResourceTemplates()).map((r) => r.uriTemplate), ['demo://items/{id}'])
  const discovered = await client.discover()
  t.equal(discovered.serverInfo.name, 'mcp-pure-http-demo')
  const before = live.seen.length
  await client.ping()
  await client.setLogLevel('warning')
  t.same(live.seen.slice(before).map((s) => s.url), ['/discover'], '2026-07-28 has no ping (any request does) and no logging/setLevel (the level goes in _meta)')
  t.equal(client.logLevel, 'warning')
  const done = await client.complete({ type: 'ref/prompt', name: 'greeting' }, { name: 'name', value: 'a' })
  t.same(done.completion.values, ['Ada', 'Alan'])
  // Nor resources/subscribe: the server says so, naming subscriptions/listen.
  await t.rejects(client.subscribe('demo://items/2'), { status: 404, code: -32601, message: /subscriptions\/listen/ })
  await t.rejects(client.unsubscribe('demo://items/2'), { status: 404, code: -32601 })
  const legacy = new PureHttpClient({ url: live.url, protocolVersion: '2025-11-25' })
  await legacy.initialize()
  const mark = live.seen.length
  await legacy.ping()
  await legacy.setLogLevel('warning')
  await legacy.subscribe('demo://items/2')
  await legacy.unsubscribe('demo://items/2')
  t.same(live.seen.slice(mark).map((s) => [s.url, s.status]), [['/ping', 202], ['/logLevel', 202], ['/resources/subscribe', 202], ['/resources/unsubscribe', 202]], 'a 2025-11-25 client has them all')
  t.same(client.clientCapabilities, { extensions: { 'io.modelcontextprotocol/tasks': {} } })
  t.equal(client.legacy, false)
})

t.test('listen: the 2026-07-28 stream of list changes and resource updates, until aborted or ended by the server', async (t) => {
  const live = await liveDemo(t)
  const client = new PureHttpClient({ url: live.url })
  const heard: { method: string; params?: any }[] = []
  const stop = new AbortController()
  const listening = client.listen({ toolsListChanged: true, resourceSubscriptions: ['demo://items/2', 'demo://nope'] }, { signal: stop.signal, onNotification: (n) => void heard.push(n) })
  while (heard.length === 0) await sleep(10)
  t.match(heard[0], { method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true, resourceSubscriptions: ['demo://items/2'] } } }, 'only the URIs it serves')
  await live.mcp.resourceUpdated('demo://items/2')
  live.mcp.tool({ name: 'late' }, () => 'late')
  while (heard.length < 3) await sleep(10)
  t.same(heard.slice(1).map((n) => [n.method, n.params.uri]), [['notifications/resources/updated', 'demo://items/2'], ['notifications/tools/list_changed', undefined]])
  stop.abort()
  await listening
  t.pass('aborting ends it without an error')

  // The server that stops ends it with the listen request's result: listen resolves.
  const again = client.listen({ promptsListChanged: true }, { onNotification: (n) => void heard.push(n) })
  while (heard.length < 4) await sleep(10)
  const closing = live.app.close()
  await again
  // The client's idle pooled connections would hold close() until they time out.
  live.app.server.closeAllConnections()
  await closing
  t.equal(heard.length, 4, 'nothing after the acknowledgement')
  await t.rejects(client.listen({ toolsListChanged: true }, { onNotification: () => undefined }), TypeError, 'a server that is gone: the network error')
})

t.test('listen: a refusal is an McpHttpError, as any request', async (t) => {
  const live = await liveDemo(t)
  const client = new PureHttpClient({ url: live.url })
  await t.rejects(client.listen({ resourceSubscriptions: 'nope' as never }, { onNotification: () => undefined }), { status: 400, code: -32602 })
  const legacy = new PureHttpClient({ url: live.url, protocolVersion: '2025-11-25' })
  const heard: unknown[] = []
  const stop = new AbortController()
  const listening = legacy.listen({ toolsListChanged: true }, { signal: stop.signal, onNotification: (n) => void heard.push(n) })
  while (heard.length === 0) await sleep(10)
  t.match(heard, [{ method: 'notifications/subscriptions/acknowledged' }], 'served to a 2025 client too (an addition, not a removal)')
  stop.abort()
  await listening
})

t.test('listen reads any well-formed event stream, and a stream cut short is an error', async (t) => {
  const { createServer } = await import('node:http')
  let answer: 'cut' | 'json' | 'end' = 'cut'
  const server = createServer((req, res) => {
    if (answer === 'json') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    if (answer === 'end') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end('event: notification\ndata: {"method":"notifications/y"}\n\n')
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    // A comment, CRLF line ends, one event's data over two lines; then the connection dies.
    res.write(':\r\n\r\nevent: notification\r\ndata: {"method":"notifications/x",\r\ndata: "params":{"n":1}}\r\n\r\n')
    setTimeout(() => req.socket.destroy(), 20)
  })
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  t.teardown(() => void server.close())
  const client = new PureHttpClient({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, retry: { attempts: 1 } })
  const heard: unknown[] = []
  await t.rejects(client.listen({ toolsListChanged: true }, { onNotification: (n) => void heard.push(n) }), TypeError, 'the cut, not a quiet end')
  t.same(heard, [{ method: 'notifications/x', params: { n: 1 } }])
  answer = 'json'
  await client.listen({ toolsListChanged: true }, { onNotification: (n) => void heard.push(n) })
  t.equal(heard.length, 1, 'an answer that is no stream carries no notifications')
  answer = 'end'
  await client.listen({ toolsListChanged: true }, { onNotification: (n) => void heard.push(n) })
  t.same(heard.at(-1), { method: 'notifications/y' }, 'a stream that ends without a result: listen resolves after what it carried')
})

t.test('tool calls: results, tool errors, protocol errors, and the _meta envelope', async (t) => {
  const live = await liveDemo(t)
  let seenMeta: any
  live.mcp.tool({ name: 'meta' }, (_a, ctx) => (((seenMeta = ctx.meta), 'ok')))
  const client = new PureHttpClient({ url: live.url, capabilities: { experimental: { x: {} } }, clientInfo: { name: 'tests', version: '9' } })
  t.same((await client.callTool('echo', { text: 'hello' })).content, [{ type: 'text', text: 'hello' }])
  t.same((await client.callTool('add', { a: 2, b: 40 })).structuredContent, { sum: 42 })
  await client.callTool('meta')
  t.same(seenMeta, {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    [MODERN_META]: { extensions: { 'io.modelcontextprotocol/tasks': {} }, experimental: { x: {} } },
    'io.modelcontextprotocol/clientInfo': { name: 'tests', version: '9' }
  })
  const unknown = await client.callTool('nope').catch((e: unknown) => e)
  t.type(unknown, McpHttpError)
  t.match(unknown, { status: 404, code: -32602, message: 'Unknown tool: nope' })
  t.ok((unknown as McpHttpError).requestId)
  const bad = await client.callTool('add', { a: 2, b: 'forty' })
  t.same(bad.content, [{ type: 'text', text: 'Invalid arguments for tool add: b must be number' }], 'SEP-1303: a result the model reads')
  t.equal(bad.isError, true)
  const missing = await client.callTool('get_weather', {}).catch((e: unknown) => e)
  t.match(missing, { status: 400, code: -32021 }, 'no elicit handler: the capability is not declared')
})

t.test('multi round-trip: two rounds of elicitation, prompts, roots, sampling, decline, and a bounded loop', async (t) => {
  const live = await liveDemo(t)
  const model = resolver({ name: 'model', resolve: () => sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 }) })
  live.mcp.tool({ name: 'llm', resolvers: { model } }, (_a, ctx) => `model ${ctx.resolved.model.model}`)
  live.mcp.tool({ name: 'forever', state: Type.Object({ n: Type.Integer() }) }, (_a, ctx) =>
    inputRequired({ inputRequests: { again: elicit('Again?', Type.Object({ ok: Type.Boolean() })) }, state: { n: (ctx.requestState?.n ?? 0) + 1 } })
  )
  const asked: string[] = []
  const client = new PureHttpClient({
    url: live.url,
    maxRounds: 3,
    handlers: {
      elicit: (params) => {
        asked.push(params.message)
        const props = Object.keys(params.requestedSchema.properties)
        if (props.includes('resolution')) return { action: 'accept', content: { resolution: 'Duplicate' } }
        if (props.includes('duplicateOfId')) return { action: 'accept', content: { duplicateOfId: 4301 } }
        if (props.includes('tone')) return { action: 'accept', content: { tone: 'kind' } }
        if (props.includes('location')) return { action: 'decline' }
        return { action: 'accept', content: { ok: true } }
      },
      sample: async () => ({ role: 'assistant', content: { type: 'text', text: 'hello' }, model: 'm1' }),
      listRoots: () => [{ uri: 'file:///work', name: 'work' }]
    }
  })
  const updated = await client.callTool('update_work_item', { workItemId: 4522, fields: { 'System.State': 'Resolved' } })
  t.equal(text(updated.content[0]), 'Bug #4522 resolved as Duplicate of Bug #4301. State set to Resolved and duplicate link created.')
  t.equal(asked.length, 2, 'one question per round')
  const review = await client.getPrompt('code_review', { code: 'x = x + 1' })
  t.match(text(review.messages[0]!.content), /in a kind tone/)
  const greeting = await client.getPrompt('greeting', { name: 'Zoë' })
  t.match(text(greeting.messages[0]!.content), /Zoë/, 'non-ASCII arguments travel base64-encoded')
  const roots = await client.readResource('demo://roots')
  t.same(JSON.parse(text(roots.contents[0])), [{ uri: 'file:///work', name: 'work' }])
  t.equal(text((await client.callTool('llm')).content[0]), 'model m1')
  const declined = await client.callTool('get_weather', {})
  t.equal(declined.isError, true)
  const forever = await client.callTool('forever').catch((e: unknown) => e)
  t.match(forever, { message: 'Still input_required after 3 rounds', code: -32603 })
  await t.rejects(client.answer({ method: 'ping' }), { code: -32601, message: 'This client does not handle ping' })
  await t.rejects(new PureHttpClient({ url: live.url }).answer({ method: 'roots/list' }), { code: -32601 })
})

t.test('resume tokens are followed: the parts of demo://numbers in one result', async (t) => {
  const live = await liveDemo(t)
  const client = new PureHttpClient({ url: live.url })
  const numbers = await client.readResource('demo://numbers')
  t.equal(numbers.contents.length, 5)
  const lines = numbers.contents.map(text).join('\n').split('\n')
  t.equal(lines.length, 10_000)
  t.equal(lines[9_999], 'line 10000')
  t.notOk(numbers._meta?.nextResumeToken)
  const item = await client.readResource('demo://items/2')
  t.same(JSON.parse(text(item.contents[0])), { id: 2, name: 'banana' })
})

t.test('tasks: polled to the result, input_required answered by the handlers, failed and cancelled', async (t) => {
  const live = await liveDemo(t)
  const client = new PureHttpClient({
    url: live.url,
    handlers: { elicit: (p) => ({ action: 'accept', content: { approve: p.message === 'Deploy to production?' } }) }
  })
  const statuses: string[] = []
  const sum = await client.callTool('slow_compute', { n: 4 }, { onTask: (task) => statuses.push(task.status) })
  t.same(sum.structuredContent, { sum: 10 })
  t.equal(statuses[0], 'working')
  t.equal(statuses.at(-1), 'completed')
  const created = live.seen.find((s) => s.url === '/tools/slow_compute/calls')
  t.equal(created?.status, 202)
  t.equal(text((await client.callTool('needs_input_task')).content[0]), 'Deployed.')
  t.ok(live.seen.some((s) => s.url.endsWith('/update') && s.status === 200), 'answered through POST /tasks/{id}/update')
  await t.rejects(client.callTool('failing_job'), { code: -32602, status: 200, message: 'The job could not find its input data' })
  let cancelling: Promise<void> | undefined
  const cancelled = client.callTool('slow_compute', { n: 100 }, { onTask: (task) => void (cancelling ??= client.cancelTask(task.taskId)) })
  await t.rejects(cancelled, { code: -32800, message: 'Cancelled by the client' })
  await cancelling
  const id = live.seen.find((s) => s.url.endsWith('/cancel'))!.url.split('/')[2]!
  t.equal((await client.getTask(id)).status, 'cancelled')
  await t.rejects(client.getTask('never-was'), { name: 'McpHttpError', status: 404 })
})

t.test('retries: 503 and 429 with the same Mcp-Request-Id, network errors, bearer token, non-JSON errors', async (t) => {
  let failures = 0
  const live = await liveDemo(t, {
    fault: (request, reply) => {
      if (request.url === '/tools/echo/calls' && failures < 2) {
        failures++
        if (failures === 1) reply.code(503).send({ code: -32603, message: 'busy' })
        else reply.code(429).header('retry-after', '0').send({ code: -32603, message: 'slow down' })
        return true
      }
      if (request.url === '/discover' && request.headers.authorization !== 'Bearer s3cret') {
        reply.code(502).header('content-type', 'text/plain').send('bad gateway')
        return true
      }
      return false
    }
  })
  const client = new PureHttpClient({ url: live.url, token: 's3cret', retry: { attempts: 3, baseMs: 5 } })
  t.equal(text((await client.callTool('echo', { text: 'again' })).content[0]), 'again')
  const calls = live.seen.filter((s) => s.url === '/tools/echo/calls')
  t.same(calls.map((c) => c.status), [503, 429, 200])
  t.equal(new Set(calls.map((c) => c.id)).size, 1, 'one Mcp-Request-Id for every attempt')
  await client.ping()
  await t.rejects(new PureHttpClient({ url: live.url }).ping(), { status: 502, code: -32603, message: 'HTTP 502' })
  const once = new PureHttpClient({ url: live.url, retry: { attempts: 1 } })
  failures = 0
  await t.rejects(once.callTool('echo', { text: 'x' }), { status: 503, message: 'busy' })
  const closed = new PureHttpClient({ url: 'http://127.0.0.1:9', retry: { attempts: 2, baseMs: 1 } })
  await t.rejects(closed.ping(), TypeError)
})

t.test('tasks and resume tokens against a scripted server: Retry-After and defaults', async (t) => {
  const s = await stub(t, {
    'POST /tools/job/calls': [{ status: 202, body: { resultType: 'task', taskId: 't1', status: 'working' }, headers: { 'retry-after': '0' } }],
    'GET /tasks/t1': [
      { status: 200, body: { taskId: 't1', status: 'input_required', inputRequests: { q: { method: 'roots/list' } } } },
      { status: 200, body: { taskId: 't1', status: 'input_required', inputRequests: { q: { method: 'roots/list' } } }, headers: { 'retry-after': '0' } },
      { status: 200, body: { taskId: 't1', status: 'failed' } }
    ],
    'POST /tasks/t1/update': [{ status: 200, body: { resultType: 'complete' } }],
    'POST /tools/gone/calls': [{ status: 202, body: { taskId: 't2', status: 'cancelled', pollIntervalMs: 1 } }],
    'POST /tools/parts/calls': [
      { status: 200, body: { _meta: { nextResumeToken: 'a' } } },
      { status: 200, body: { content: [{ type: 'text', text: 'two' }], _meta: { nextResumeToken: 'b' } } },
      { status: 200, body: { isError: true } }
    ],
    'POST /tools/stateful/calls': [
      { status: 200, body: { resultType: 'input_required', requestState: 's' } },
      { status: 200, body: { content: [], resultType: 'complete' } }
    ],
    'POST /requests': [{ status: 200, body: { method: 'elicitation/create', params: {} }, headers: { 'mcp-request-id': 'r1' } }],
    'POST /responses': [{ status: 202 }]
  })
  const client = new PureHttpClient({ url: s.url, handlers: { listRoots: () => [] } })
  const started = Date.now()
  await t.rejects(client.callTool('job'), { message: 'Task failed', code: -32603 })
  t.ok(Date.now() - started >= 900, 'without pollIntervalMs or Retry-After, a second between polls')
  t.equal(s.requests.filter((r) => r.key === 'POST /tasks/t1/update').length, 1, 'each input request answered once')
  t.same(JSON.parse(s.requests.find((r) => r.key === 'POST /tasks/t1/update')!.body).inputResponses, { q: { roots: [] } })
  await t.rejects(client.callTool('gone'), { message: 'Task cancelled', code: -32800 })
  const parts = await client.callTool('parts')
  t.same(parts, { isError: true, content: [{ type: 'text', text: 'two' }] })
  t.same(JSON.parse(s.requests.at(-1)!.body)._meta.resumeToken, 'b')
  t.same((await client.callTool('stateful')).content, [])
  t.same(JSON.parse(s.requests.at(-1)!.body).requestState, 's', 'a round with state only')
  const failing = new PureHttpClient({ url: s.url, handlers: { elicit: () => { throw new Error('the form broke') } } })
  t.equal(await failing.pollRequests(), true)
  const answered = s.requests.at(-1)!
  t.equal(answered.headers['mcp-request-id'], 'r1')
  t.same(JSON.parse(answered.body), { error: { code: -32603, message: 'the form broke' } })
})

t.test('legacy era: initialize, then the poller answers /requests and delivers notifications', async (t) => {
  const live = await liveDemo(t, { sessions: true, mcp: createDemoServer({ taskStepMs: 20 }) })
  const client = new PureHttpClient({
    url: live.url,
    protocolVersion: '2025-11-25',
    handlers: { elicit: () => ({ action: 'accept', content: { location: 'Oslo' } }) }
  })
  t.equal(client.legacy, true)
  const init = await client.initialize()
  t.equal(init.protocolVersion, '2025-11-25')
  t.ok(client.sessionId, 'the session issued by initialize')
  const heard: any[] = []
  const stop = new AbortController()
  const polling = client.poll({ signal: stop.signal, intervalMs: 10, onNotification: (n) => void heard.push(n) })
  const weather = await client.callTool('get_weather', {})
  t.match(text(weather.content[0]), /^Weather in Oslo: /)
  t.notOk('resultType' in weather)
  await client.subscribe('demo://items/1')
  await live.mcp.resourceUpdated('demo://items/1')
  while (heard.length === 0) await sleep(10)
  t.same(heard, [{ method: 'notifications/resources/updated', params: { uri: 'demo://items/1' } }])
  stop.abort()
  await polling
  const ack = live.seen.find((s) => s.method === 'POST' && s.url === '/notifications')
  t.equal(ack?.status, 202, 'the group was acknowledged')
})

t.test('the poller de-duplicates a redelivered request and survives a lost acknowledgement', async (t) => {
  let failResponses = 0
  let loseAnswer = 0
  const store = new MemoryStore({ redeliveryMs: 30 })
  // Each call below waits until its server-to-client request is queued.
  const untilQueued = queuedRequests(store)
  const live = await liveDemo(t, {
    mcp: createDemoServer({ store }),
    fault: (request, reply) => {
      if (request.url === '/responses' && failResponses > 0) {
        failResponses--
        reply.code(503).send({ code: -32603, message: 'lost' })
        return true
      }
      return false
    },
    onSend: (request, reply) => {
      if (request.url === '/responses' && loseAnswer > 0 && reply.statusCode === 202) {
        loseAnswer--
        reply.code(503)
      }
    }
  })
  let asked = 0
  const client = new PureHttpClient({
    url: live.url,
    protocolVersion: '2025-11-25',
    retry: { attempts: 1, baseMs: 1 },
    handlers: { elicit: () => ((asked++, { action: 'accept', content: { location: 'Rome' } })) }
  })
  await client.initialize()
  t.equal(client.sessionId, undefined, 'no session issued: none kept')
  const pending = client.callTool('get_weather', {})
  await untilQueued(1)
  failResponses = 1
  await t.rejects(client.pollRequests(), { name: 'McpHttpError', status: 503 }, 'the answer did not arrive')
  await sleep(40)
  t.equal(await client.pollRequests(), true, 'redelivered, answered from memory')
  t.equal(asked, 1, 'the handler ran once')
  t.match(text((await pending).content[0]), /Rome/)

  // The answer arrives but its acknowledgement is lost: the retry meets 404 and is content.
  const retrying = new PureHttpClient({ url: live.url, protocolVersion: '2025-11-25', retry: { attempts: 2, baseMs: 1 }, handlers: { elicit: () => ({ action: 'accept', content: { location: 'Pisa' } }) } })
  await retrying.initialize()
  const second = retrying.callTool('get_weather', {})
  await untilQueued(2)
  loseAnswer = 1
  t.equal(await retrying.pollRequests(), true)
  t.match(text((await second).content[0]), /Pisa/)
  t.equal(await retrying.pollRequests(), false, 'nothing left')

  // A request the client has no handler for is answered with an error.
  const noHandler = new PureHttpClient({ url: live.url, protocolVersion: '2025-11-25', capabilities: { elicitation: {} } })
  await noHandler.initialize()
  const refused = noHandler.callTool('get_weather', {}).catch((e: unknown) => e)
  await untilQueued(3)
  t.equal(await noHandler.pollRequests(), true)
  t.ok(await refused)
  // Without an onNotification a group is still acknowledged; the default pause ends with the signal.
  await noHandler.subscribe('demo://readme')
  await live.mcp.resourceUpdated('demo://readme')
  // Aborted once a round finds nothing (no group, no request): the loop is then in its pause.
  const stop = new AbortController()
  const { pollNotifications, pollRequests } = noHandler
  let none = false
  noHandler.pollNotifications = async (...args) => {
    none = !(await pollNotifications.apply(noHandler, args))
    return !none
  }
  noHandler.pollRequests = async (...args) => {
    const requested = await pollRequests.apply(noHandler, args)
    if (none && !requested) setImmediate(() => stop.abort())
    return requested
  }
  await noHandler.poll({ signal: stop.signal })
  t.equal(await noHandler.pollNotifications(), false, 'acknowledged')
})
