import t from 'tap'
import { McpServer } from '../../src/core/mcp-server.js'
import { MemoryStore } from '../../src/store/memory.js'
import { build, call } from '../helpers/helper.js'

const init = (protocolVersion: string, capabilities: Record<string, unknown> = {}) => ({
  method: 'POST' as const,
  url: '/initialize',
  payload: { protocolVersion, capabilities, clientInfo: { name: 'test', version: '1' } }
})

t.test('POST /initialize negotiates the version and remembers a legacy client', async (t) => {
  const store = new MemoryStore()
  const { app } = await build(t, { store })
  const legacy = await call(app, init('2025-06-18', { elicitation: {} }))
  t.equal(legacy.status, 200)
  t.equal(legacy.body.protocolVersion, '2025-06-18')
  t.equal(legacy.headers['mcp-protocol-version'], '2025-06-18')
  t.equal(legacy.body.serverInfo.name, 'mcp-pure-http-demo')
  t.ok(legacy.body.capabilities.tools)
  t.type(legacy.body.instructions, 'string')
  t.notOk('resultType' in legacy.body, 'a legacy answer has no resultType')
  t.same((await store.connections.getLegacyClient('anonymous'))?.capabilities, { elicitation: {} })
  const unknown = await call(app, init('2024-01-01'))
  t.equal(unknown.body.protocolVersion, '2025-11-25', 'an unknown version gets the newest legacy one')
  const modern = await call(app, init('2026-07-28'))
  t.same([modern.body.protocolVersion, modern.body.resultType], ['2026-07-28', 'complete'])
  const bad = await call(app, { method: 'POST', url: '/initialize', payload: { protocolVersion: '2025-06-18' } })
  t.same([bad.status, bad.body.code], [400, -32602])
})

t.test('GET /discover with ETag and cache hints', async (t) => {
  const mcp = new McpServer({ name: 'd', version: '2', description: 'A test server', cacheHints: { ttlMs: 60_000, cacheScope: 'public' } })
  const { app } = await build(t, { mcp })
  const res = await call(app, { url: '/discover' })
  t.equal(res.status, 200)
  t.same(res.body.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18'])
  t.same(res.body.serverInfo, { name: 'd', version: '2', description: 'A test server' })
  t.notOk('instructions' in res.body, 'no instructions configured, none sent')
  t.same([res.body.resultType, res.body.ttlMs, res.body.cacheScope], ['complete', 60000, 'public'])
  t.equal(res.headers['cache-control'], 'public, max-age=60')
  t.match(res.headers.vary, /Mcp-Protocol-Version/)
  const nm = await app.inject({ url: '/discover', headers: { 'if-none-match': res.headers.etag as string } })
  t.equal(nm.statusCode, 304)
  const star = await app.inject({ url: '/discover', headers: { 'if-none-match': '*' } })
  t.equal(star.statusCode, 304)
})

t.test('GET /ping answers 202 with no body', async (t) => {
  const { app } = await build(t)
  const res = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.equal(res.statusCode, 202)
  t.equal(res.payload, '')
  const bad = await call(app, { url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-meta': 'nope' } })
  t.same([bad.status, bad.body.code], [400, -32602], 'a bad Mcp-Meta is never ignored')
})

t.test('POST /logLevel stores the level for the connection', async (t) => {
  const store = new MemoryStore()
  const { app } = await build(t, { store })
  const res = await app.inject({ method: 'POST', url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'warning' } })
  t.equal(res.statusCode, 202)
  t.equal(res.payload, '')
  t.equal(await store.connections.getLogLevel('anonymous'), 'warning')
  const bad = await call(app, { method: 'POST', url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'loud' } })
  t.same([bad.status, bad.body.code], [400, -32602])
  t.equal(await store.connections.getLogLevel('anonymous'), 'warning')
})

t.test('POST /completions for prompt arguments and template variables', async (t) => {
  const { app } = await build(t)
  const complete = (ref: unknown, name: string, value: string) =>
    call(app, { method: 'POST', url: '/completions', payload: { ref, argument: { name, value } } })
  const prompt = await complete({ type: 'ref/prompt', name: 'greeting' }, 'name', 'g')
  t.same(prompt.body, { completion: { values: ['Grace'] }, resultType: 'complete' })
  const template = await complete({ type: 'ref/resource', uri: 'demo://items/{id}' }, 'id', '')
  t.same(template.body.completion.values, ['1', '2', '3'])
  const noCompleter = await complete({ type: 'ref/prompt', name: 'greeting' }, 'other', 'x')
  t.same(noCompleter.body.completion, { values: [] })
  const unknownPrompt = await complete({ type: 'ref/prompt', name: 'nope' }, 'name', '')
  t.same([unknownPrompt.status, unknownPrompt.body.code], [404, -32602])
  const unknownTemplate = await complete({ type: 'ref/resource', uri: 'demo://nope/{x}' }, 'x', '')
  t.equal(unknownTemplate.status, 404)
  const badRef = await complete({ type: 'ref/tool', name: 'echo' }, 'x', '')
  t.same([badRef.status, badRef.body.code], [400, -32602])
})

t.test('completions are capped at 100 with total and hasMore', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  const many = Array.from({ length: 250 }, (_, i) => `v${i}`)
  mcp.prompt({ name: 'p', arguments: { a: { complete: () => many }, b: { complete: () => ({ values: ['x'], total: 7, hasMore: true }) }, c: { complete: () => { throw new Error('no') } } } }, () => 'ok')
  mcp.prompt({ name: 'q', arguments: { a: { complete: (value, ctx) => [value, ctx.arguments.other ?? 'none'] } } }, () => 'ok')
  const { app } = await build(t, { mcp })
  const res = await call(app, { method: 'POST', url: '/completions', payload: { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: '' } } })
  t.equal(res.body.completion.values.length, 100)
  t.same([res.body.completion.total, res.body.completion.hasMore], [250, true])
  const passthrough = await call(app, { method: 'POST', url: '/completions', payload: { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'b', value: '' } } })
  t.same(passthrough.body.completion, { values: ['x'], total: 7, hasMore: true })
  const failing = await call(app, { method: 'POST', url: '/completions', payload: { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'c', value: '' } } })
  t.same([failing.status, failing.body], [500, { code: -32603, message: 'Internal error' }])
  const ctx = await call(app, {
    method: 'POST',
    url: '/completions',
    payload: { ref: { type: 'ref/prompt', name: 'q' }, argument: { name: 'a', value: 'v' }, context: { arguments: { other: 'o' } } }
  })
  t.same(ctx.body.completion.values, ['v', 'o'], 'the completer sees the other arguments')
})

t.test('a completer may refuse with a protocol error', async (t) => {
  const { errors } = await import('../../src/errors.js')
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.prompt({ name: 'p', arguments: { a: { complete: () => { throw errors.invalidParams('too short') } } } }, () => 'ok')
  const { app } = await build(t, { mcp })
  const res = await call(app, { method: 'POST', url: '/completions', payload: { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: '' } } })
  t.same([res.status, res.body], [400, { code: -32602, message: 'too short' }])
})

t.test('a store that fails is a 500 with no details, and is logged', async (t) => {
  const store = new MemoryStore()
  store.connections.setLogLevel = async () => {
    throw new Error('ECONNREFUSED 10.0.0.7:6379')
  }
  const { app } = await build(t, { store })
  const res = await call(app, { method: 'POST', url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'info' } })
  t.same([res.status, res.body], [500, { code: -32603, message: 'Internal error' }])
  t.notMatch(res.raw, /ECONNREFUSED/)
})
