import t from 'tap'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import type { Principal } from '../../src/core/request-context.js'
import { McpError } from '../../src/errors.js'
import { elicit, sample } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import { MemoryStore } from '../../src/store/memory.js'
import type { StoreLimits } from '../../src/store/types.js'
import { build, call, queuedRequests } from '../helpers/helper.js'

const LEGACY = { 'mcp-protocol-version': '2025-11-25' }
const City = Type.Object({ city: Type.String() })

function server(limits: Partial<StoreLimits> = {}, answerTimeoutMs = 5000) {
  const mcp = new McpServer({ name: 't', version: '1', store: new MemoryStore(limits), answerTimeoutMs })
  mcp.tool({ name: 'work', input: Type.Object({ steps: Type.Integer() }) }, async ({ steps }, ctx) => {
    for (let i = 1; i <= steps; i++) await ctx.progress(i, steps, `step ${i}`)
    await ctx.sendLog('info', { note: 'an info line' })
    await ctx.sendLog('error', 'an error line', 'worker')
    return `did ${steps}`
  })
  mcp.tool({ name: 'ask_inline' }, async (_args, ctx) => {
    const first = await ctx.elicit('City?', City)
    if (first.action !== 'accept') return `no city (${first.action})`
    const roots = await ctx.listRoots()
    const llm = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 })
    return `city=${first.content.city} roots=${roots.length} model=${llm.model}`
  })
  mcp.tool({ name: 'hand_rolled', state: Type.Object({ n: Type.Integer() }) }, (_args, ctx) => {
    const a = ctx.inputResponses?.c as { content?: { city: string } } | undefined
    return a?.content === undefined ? inputRequired({ inputRequests: { c: elicit('City?', City) }, state: { n: 1 } }) : `hand ${a.content.city} ${ctx.requestState?.n}`
  })
  const city = resolver({ name: 'city', resolve: () => elicit('City?', City) })
  mcp.tool({ name: 'resolved', resolvers: { city } }, (_a, ctx) => `resolved ${ctx.resolved.city.city}`)
  mcp.tool({ name: 'wait_for_cancel' }, (_args, ctx) => {
    started?.()
    return new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(`aborted: ${(ctx.signal.reason as Error).message}`)))
  })
  mcp.tool({ name: 'fail_on_cancel' }, (_args, ctx) => {
    started?.()
    return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('gave up: cancelled'))))
  })
  mcp.tool({ name: 'fail' }, () => {
    throw new Error('broken')
  })
  mcp.tool({ name: 'llm' }, async (_a, ctx) => `model ${(await ctx.sample({ messages: [], maxTokens: 1 })).model}`)
  mcp.resource({ uri: 'x:watched', name: 'w' }, () => 'w')
  mcp.resource({ uri: 'x:other', name: 'o' }, () => 'o')
  return mcp
}
let started: (() => void) | undefined

async function initialize(app: FastifyInstance, capabilities: Record<string, unknown>, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url: '/initialize',
    headers: { ...LEGACY, ...headers },
    payload: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'legacy', version: '1' } }
  })
}

/** Answer every request the server queues, the way a legacy client's poller would. */
async function answerAll(app: FastifyInstance, answer: (method: string) => unknown, headers: Record<string, string> = {}) {
  for (let i = 0; i < 50; i++) {
    const next = await app.inject({ method: 'POST', url: '/requests', headers })
    if (next.statusCode === 204) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      continue
    }
    const id = next.headers['mcp-request-id'] as string
    const res = await app.inject({ method: 'POST', url: '/responses', headers: { ...headers, 'mcp-request-id': id }, payload: answer(next.json().method) as object })
    if (res.statusCode !== 202) throw new Error(`answer refused: ${res.payload}`)
  }
}

t.test('notifications: groups repeat until acknowledged; new ones wait', async (t) => {
  const { app } = await build(t, { mcp: server({ notificationBatch: 2 }) })
  const empty = await app.inject({ url: '/notifications' })
  t.same([empty.statusCode, empty.json(), empty.headers['mcp-message-group']], [200, [], undefined], 'empty: [] and no group')
  await call(app, { method: 'POST', url: '/tools/work/calls', payload: { arguments: { steps: 3 }, _meta: { progressToken: 'p1' } } })
  const g1 = await app.inject({ url: '/notifications' })
  const id1 = g1.headers['mcp-message-group'] as string
  t.match(id1, /^[0-9a-f-]{36}$/)
  t.same(g1.json(), [
    { method: 'notifications/progress', params: { progressToken: 'p1', progress: 1, total: 3, message: 'step 1' } },
    { method: 'notifications/progress', params: { progressToken: 'p1', progress: 2, total: 3, message: 'step 2' } }
  ])
  const again = await app.inject({ url: '/notifications' })
  t.same([again.headers['mcp-message-group'], again.json()], [id1, g1.json()], 'the same group until acknowledged')
  const ack = await app.inject({ method: 'POST', url: '/notifications', headers: { 'mcp-message-group': id1 } })
  t.same([ack.statusCode, ack.payload], [202, ''])
  const g2 = await app.inject({ url: '/notifications' })
  t.not(g2.headers['mcp-message-group'], id1)
  t.same(g2.json().map((n: { params: { progress: number } }) => n.params.progress), [3], 'then the rest, in order')
  const aliasAck = await app.inject({ method: 'POST', url: '/notifications', headers: { 'mcp-group-id': g2.headers['mcp-message-group'] as string } })
  t.equal(aliasAck.statusCode, 202, 'Mcp-Group-Id is accepted as an alias')
  const reAck = await app.inject({ method: 'POST', url: '/notifications', headers: { 'mcp-group-id': g2.headers['mcp-message-group'] as string } })
  t.equal(reAck.statusCode, 202, 'acknowledging the last group again is harmless (a retried ack)')
  const unknown = await call(app, { method: 'POST', url: '/notifications', headers: { 'mcp-message-group': 'nope' } })
  t.same([unknown.status, unknown.body.code], [404, -32602])
  const nothing = await call(app, { method: 'POST', url: '/notifications' })
  t.same([nothing.status, nothing.body.code], [400, -32600])
  await call(app, { method: 'POST', url: '/tools/work/calls', payload: { arguments: { steps: 1 }, _meta: { progressToken: { not: 'valid' } } } })
  t.same((await app.inject({ url: '/notifications' })).json(), [], 'no (usable) progress token, no progress; no log level, no log')
})

t.test('log notifications follow the client level: legacy /logLevel, modern per-request _meta', async (t) => {
  const { app } = await build(t, { mcp: server() })
  await app.inject({ method: 'POST', url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'warning' } })
  await call(app, { method: 'POST', url: '/tools/work/calls', payload: { arguments: { steps: 0 } }, headers: LEGACY })
  const legacy = (await app.inject({ url: '/notifications' })).json()
  t.same(legacy, [{ method: 'notifications/message', params: { level: 'error', data: 'an error line', logger: 'worker' } }], 'info is below warning')
  await app.inject({ method: 'POST', url: '/notifications', headers: { 'mcp-message-group': (await app.inject({ url: '/notifications' })).headers['mcp-message-group'] as string } })
  await call(app, { method: 'POST', url: '/tools/work/calls', payload: { arguments: { steps: 0 }, _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } } })
  t.same((await app.inject({ url: '/notifications' })).json().map((n: { params: { level: string } }) => n.params.level), ['info', 'error'])
})

t.test('an instance booting on a shared store announces no list change to the clients of the others', async (t) => {
  const shared = new MemoryStore()
  const running = new McpServer({ name: 'a', version: '1', store: shared })
  running.tool({ name: 'echo' }, () => 'a')
  const { app } = await build(t, { mcp: running })
  await app.inject({ method: 'POST', url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'error' } }) // the connection exists
  const booting = new McpServer({ name: 'b', version: '1', store: shared })
  booting.tool({ name: 'echo' }, () => 'b')
  booting.prompt({ name: 'hello' }, () => 'hi')
  t.same((await app.inject({ url: '/notifications' })).json(), [], 'registering the catalogue before serving is not news')
  const second = await build(t, { mcp: booting })
  await second.app.ready()
  booting.tool({ name: 'late' }, () => 'late')
  t.same((await app.inject({ url: '/notifications' })).json(), [{ method: 'notifications/tools/list_changed' }], 'a change once it serves is')
})

t.test('list_changed after a run-time registration; resources/updated only to subscribers', async (t) => {
  const mcp = server()
  const { app } = await build(t, { mcp, authenticate: async (request: FastifyRequest): Promise<Principal> => ({ id: String(request.headers['x-user']), scopes: [], anonymous: false }) })
  const alice = { 'x-user': 'alice' }
  const bob = { 'x-user': 'bob' }
  await app.inject({ method: 'POST', url: '/resources/subscribe', headers: { ...alice, 'mcp-protocol-version': '2025-11-25' }, payload: { uri: 'x:watched' } })
  await app.inject({ method: 'POST', url: '/logLevel', headers: { ...bob, 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'error' } })
  mcp.tool({ name: 'late' }, () => 'late')
  await mcp.resourceUpdated('x:watched')
  await mcp.resourceUpdated('x:other')
  const forAlice = (await app.inject({ url: '/notifications', headers: alice })).json()
  t.same(forAlice, [
    { method: 'notifications/tools/list_changed' },
    { method: 'notifications/resources/updated', params: { uri: 'x:watched' } }
  ])
  t.same((await app.inject({ url: '/notifications', headers: bob })).json(), [{ method: 'notifications/tools/list_changed' }], 'bob did not subscribe')
  const caps = (await call(app, { url: '/discover', headers: alice })).body.capabilities
  t.same([caps.tools.listChanged, caps.resources.subscribe], [true, true])
})

t.test('two principals never see each other\'s notifications or requests', async (t) => {
  const mcp = server()
  const { app } = await build(t, { mcp, authenticate: async (request: FastifyRequest): Promise<Principal> => ({ id: String(request.headers['x-user']), scopes: [], anonymous: false }) })
  const queued = queuedRequests(mcp.store)
  await initialize(app, { elicitation: {} }, { 'x-user': 'alice' })
  const pending = call(app, { method: 'POST', url: '/tools/resolved/calls', payload: {}, headers: { ...LEGACY, 'x-user': 'alice' } })
  await queued(1)
  const bobTakes = await app.inject({ method: 'POST', url: '/requests', headers: { 'x-user': 'bob' } })
  t.equal(bobTakes.statusCode, 204, 'bob sees no request of alice')
  const aliceTakes = await app.inject({ method: 'POST', url: '/requests', headers: { 'x-user': 'alice' } })
  const id = aliceTakes.headers['mcp-request-id'] as string
  const bobAnswers = await call(app, { method: 'POST', url: '/responses', headers: { 'x-user': 'bob', 'mcp-request-id': id }, payload: { action: 'accept', content: { city: 'Evil' } } })
  t.same([bobAnswers.status, bobAnswers.body.code], [404, -32602], 'nor can he answer it')
  await app.inject({ method: 'POST', url: '/responses', headers: { 'x-user': 'alice', 'mcp-request-id': id }, payload: { action: 'accept', content: { city: 'Paris' } } })
  t.equal((await pending).body.content[0].text, 'resolved Paris')
  await call(app, { method: 'POST', url: '/tools/work/calls', payload: { arguments: { steps: 1 }, _meta: { progressToken: 1 } }, headers: { 'x-user': 'alice' } })
  t.same((await app.inject({ url: '/notifications', headers: { 'x-user': 'bob' } })).json(), [])
})

t.test('a legacy client answers through /requests and /responses while its call waits', async (t) => {
  const { app } = await build(t, { mcp: server() })
  await initialize(app, { elicitation: {}, roots: {}, sampling: {} })
  const answer = (method: string) =>
    method === 'elicitation/create'
      ? { action: 'accept', content: { city: 'Oslo' } }
      : method === 'roots/list'
        ? { roots: [{ uri: 'file:///a' }, { uri: 'file:///b' }] }
        : { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm1' }
  for (const [tool, expected] of [
    ['ask_inline', 'city=Oslo roots=2 model=m1'],
    ['hand_rolled', 'hand Oslo 1'],
    ['resolved', 'resolved Oslo']
  ] as const) {
    const pending = call(app, { method: 'POST', url: `/tools/${tool}/calls`, payload: {}, headers: LEGACY })
    const answering = answerAll(app, answer)
    const res = await pending
    await answering
    t.equal(res.body.content[0].text, expected, tool)
    t.notOk('resultType' in res.body)
  }
})

t.test('/requests and /responses: empty body rule, redelivery, validation, errors, timeouts', async (t) => {
  const { app, mcp } = await build(t, { mcp: server({ redeliveryMs: 40 }, 500) })
  const queued = queuedRequests(mcp.store)
  await initialize(app, { elicitation: {}, sampling: {} })
  const withBody = await call(app, { method: 'POST', url: '/requests', payload: { x: 1 } })
  t.same([withBody.status, withBody.body.message], [400, 'POST /requests takes no body'])
  const emptyJson = await app.inject({ method: 'POST', url: '/requests', headers: { 'content-type': 'application/json' } })
  t.equal(emptyJson.statusCode, 204, 'an empty body with a JSON content type is still empty')
  const pending = call(app, { method: 'POST', url: '/tools/llm/calls', payload: {}, headers: LEGACY })
  await queued(1)
  const first = await app.inject({ method: 'POST', url: '/requests' })
  const id = first.headers['mcp-request-id'] as string
  t.equal(first.json().method, 'sampling/createMessage')
  t.equal((await app.inject({ method: 'POST', url: '/requests' })).statusCode, 204, 'pending: not handed out again at once')
  await new Promise((resolve) => setTimeout(resolve, 60))
  const redelivered = await app.inject({ method: 'POST', url: '/requests' })
  t.same([redelivered.statusCode, redelivered.headers['mcp-request-id']], [200, id], 'after the timeout: the same request, same id')
  const wrong = await call(app, { method: 'POST', url: '/responses', headers: { 'mcp-request-id': id }, payload: { action: 'accept' } })
  t.same([wrong.status, wrong.body.code], [400, -32602], 'an elicitation answer to a sampling request')
  t.match(wrong.body.message, /^Invalid response: /)
  const missingId = await call(app, { method: 'POST', url: '/responses', payload: {} })
  t.same([missingId.status, missingId.body.code], [400, -32602], 'Mcp-Request-Id is required')
  const unknownId = await call(app, { method: 'POST', url: '/responses', headers: { 'mcp-request-id': 'never-asked' }, payload: {} })
  t.same([unknownId.status, unknownId.body.code], [404, -32602])
  await app.inject({ method: 'POST', url: '/responses', headers: { 'mcp-request-id': id }, payload: { error: { code: -1, message: 'user said no' } } })
  t.same((await pending).body, { content: [{ type: 'text', text: 'The client answered sampling/createMessage with an error: user said no' }], isError: true })
  const late = await call(app, { method: 'POST', url: '/responses', headers: { 'mcp-request-id': id }, payload: { role: 'assistant', content: {}, model: 'm' } })
  t.same([late.status, late.body.code], [404, -32602], 'a finished request is gone')
  const timeout = await call(app, { method: 'POST', url: '/tools/llm/calls', payload: {}, headers: LEGACY })
  t.same(timeout.body, { content: [{ type: 'text', text: 'The client did not answer within 500 ms' }], isError: true })
  t.equal((await app.inject({ method: 'POST', url: '/requests' })).statusCode, 204, 'the abandoned request was withdrawn')
})

t.test('request queue limits: a clear error when full, or discard the oldest', async (t) => {
  const strictMcp = server({ maxRequests: 1 }, 2000)
  const strict = (await build(t, { mcp: strictMcp })).app
  const strictQueued = queuedRequests(strictMcp.store)
  await initialize(strict, { sampling: {} })
  const first = call(strict, { method: 'POST', url: '/tools/llm/calls', payload: {}, headers: LEGACY })
  await strictQueued(1)
  const second = await call(strict, { method: 'POST', url: '/tools/llm/calls', payload: {}, headers: LEGACY })
  t.same([second.status, second.body.code], [503, -32603])
  t.match(second.body.message, /request queue is full \(1 waiting\)/)
  t.equal(second.headers['retry-after'], '5')
  await answerAll(strict, () => ({ role: 'assistant', content: {}, model: 'm' }))
  t.equal((await first).body.content[0].text, 'model m')

  const lenientMcp = server({ maxRequests: 1, discardOldestRequests: true }, 2000)
  const lenient = (await build(t, { mcp: lenientMcp })).app
  const lenientQueued = queuedRequests(lenientMcp.store)
  await initialize(lenient, { sampling: {} })
  const old = call(lenient, { method: 'POST', url: '/tools/llm/calls', payload: {}, headers: LEGACY })
  await lenientQueued(1)
  const newer = call(lenient, { method: 'POST', url: '/tools/llm/calls', payload: {}, headers: LEGACY })
  t.same((await old).body.content[0].text, 'The client answered sampling/createMessage with an error: Discarded: the request queue was full')
  await answerAll(lenient, () => ({ role: 'assistant', content: {}, model: 'new' }))
  t.equal((await newer).body.content[0].text, 'model new')
})

t.test('notifications/cancelled aborts the running request it names', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const running = new Promise<void>((resolve) => (started = resolve))
  const pending = call(app, { method: 'POST', url: '/tools/wait_for_cancel/calls', payload: {}, headers: { 'mcp-request-id': 'call-7' } })
  await running
  const other = await app.inject({ method: 'POST', url: '/notifications', payload: [{ method: 'notifications/cancelled', params: { requestId: 'call-8' } }] })
  t.equal(other.statusCode, 202, 'naming another request changes nothing')
  await app.inject({ method: 'POST', url: '/notifications', payload: [{ method: 'notifications/cancelled', params: { requestId: 'call-7', reason: 'user hit stop' } }] })
  t.equal((await pending).body.content[0].text, 'aborted: user hit stop')
  const bad = await call(app, { method: 'POST', url: '/notifications', payload: [{ method: 'notifications/cancelled', params: {} }] })
  t.same([bad.status, bad.body.code], [400, -32602])
})

t.test('a handler that fails because its call was cancelled is logged at debug, not as a failure', async (t) => {
  const lines: string[] = []
  const { app } = await build(t, { mcp: server(), logger: { level: 'debug', stream: { write: (l: string) => lines.push(l) } } as never })
  const running = new Promise<void>((resolve) => (started = resolve))
  const pending = call(app, { method: 'POST', url: '/tools/fail_on_cancel/calls', payload: {}, headers: { 'mcp-request-id': 'call-9' } })
  await running
  await app.inject({ method: 'POST', url: '/notifications', payload: [{ method: 'notifications/cancelled', params: { requestId: 'call-9' } }] })
  t.equal((await pending).body.content[0].text, 'gave up: cancelled')
  await call(app, { method: 'POST', url: '/tools/fail/calls', payload: {} })
  const logged = lines.map((l) => JSON.parse(l) as { level: number; msg: string; tool?: string }).filter((l) => l.tool !== undefined)
  t.same(logged.map((l) => [l.level, l.msg, l.tool]), [[20, 'tool call cancelled', 'fail_on_cancel'], [40, 'tool handler failed', 'fail']])
})

t.test('client notifications reach listeners', async (t) => {
  const mcp = server()
  const heard: string[] = []
  mcp.onClientNotification((owner, n) => heard.push(`${owner} ${n.method}`))
  const { app } = await build(t, { mcp })
  const res = await app.inject({
    method: 'POST',
    url: '/notifications',
    payload: [{ method: 'notifications/initialized' }, { method: 'notifications/roots/list_changed' }]
  })
  t.equal(res.statusCode, 202)
  t.same(heard, ['anonymous notifications/initialized', 'anonymous notifications/roots/list_changed'])
  const bad = await call(app, { method: 'POST', url: '/notifications', payload: [{ params: {} }] })
  t.same([bad.status, bad.body.code], [400, -32602])
})

t.test('sessions: /initialize issues Mcp-Session-Id and each session is its own connection', async (t) => {
  const { app } = await build(t, { mcp: server(), sessions: true })
  const s1 = (await initialize(app, { elicitation: {} })).headers['mcp-session-id'] as string
  const s2 = (await initialize(app, {})).headers['mcp-session-id'] as string
  t.match(s1, /^[\w-]{24}$/)
  t.not(s1, s2)
  await app.inject({ method: 'POST', url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': s1 }, payload: { level: 'debug' } })
  await call(app, { method: 'POST', url: '/tools/work/calls', headers: { ...LEGACY, 'mcp-session-id': s1 }, payload: { arguments: { steps: 0 } } })
  t.equal((await app.inject({ url: '/notifications', headers: { 'mcp-session-id': s1 } })).json().length, 2)
  t.same((await app.inject({ url: '/notifications', headers: { 'mcp-session-id': s2 } })).json(), [])
  const pending = call(app, { method: 'POST', url: '/tools/resolved/calls', payload: {}, headers: { ...LEGACY, 'mcp-session-id': s1 } })
  await answerAll(app, () => ({ action: 'accept', content: { city: 'Rome' } }), { 'mcp-session-id': s1 })
  t.equal((await pending).body.content[0].text, 'resolved Rome', 'the session kept the capabilities its initialize declared')
  const noCaps = await call(app, { method: 'POST', url: '/tools/resolved/calls', payload: {}, headers: { ...LEGACY, 'mcp-session-id': s2 } })
  t.same([noCaps.status, noCaps.body.code], [400, -32021])
  const unknown = await call(app, { url: '/tools', headers: { 'mcp-session-id': 'forged' } })
  t.same([unknown.status, unknown.body.code], [404, -32600])
})

t.test('modern ctx.elicit: input_required, then a replay that gets the answer', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, roots: {}, sampling: {} } }
  let res = await call(app, { method: 'POST', url: '/tools/ask_inline/calls', payload: { _meta: meta } })
  const asked: string[] = []
  const answers: Record<string, unknown> = {
    'elicitation/create': { action: 'accept', content: { city: 'Kyiv' } },
    'roots/list': { roots: [] },
    'sampling/createMessage': { role: 'assistant', content: {}, model: 'm2' }
  }
  while (res.body.resultType === 'input_required') {
    const [key, req] = Object.entries(res.body.inputRequests as Record<string, { method: string }>)[0]!
    asked.push(`${key}:${req.method}`)
    res = await call(app, {
      method: 'POST',
      url: '/tools/ask_inline/calls',
      payload: { _meta: meta, requestState: res.body.requestState, inputResponses: { [key]: answers[req.method] } }
    })
  }
  t.same(asked, ['ask.0:elicitation/create', 'ask.1:roots/list', 'ask.2:sampling/createMessage'], 'one question per round, in call order')
  t.equal(res.body.content[0].text, 'city=Kyiv roots=0 model=m2')
  const declined = await call(app, {
    method: 'POST',
    url: '/tools/ask_inline/calls',
    payload: { _meta: meta, requestState: (await call(app, { method: 'POST', url: '/tools/ask_inline/calls', payload: { _meta: meta } })).body.requestState, inputResponses: { 'ask.0': { action: 'decline' } } }
  })
  t.equal(declined.body.content[0].text, 'no city (decline)', 'ctx.elicit returns the whole outcome')
})

t.test('a store that fails while queueing a question fails the call, not the server', async (t) => {
  const mcp = server()
  mcp.store.mailbox.enqueueRequest = async () => {
    throw new McpError(-32603, 'queue unavailable', 503)
  }
  const { app } = await build(t, { mcp })
  await initialize(app, { sampling: {} })
  const res = await call(app, { method: 'POST', url: '/tools/llm/calls', payload: {}, headers: LEGACY })
  t.same([res.status, res.body.message], [503, 'queue unavailable'])
  void sample
})
