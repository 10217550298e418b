import t from 'tap'
import { McpServer } from '../../src/core/mcp-server.js'
import { build, call } from '../helpers/helper.js'

t.test('Mcp-Protocol-Version: default, echo, unsupported', async (t) => {
  const { app } = await build(t)
  const none = await call(app, { url: '/tools' })
  t.equal(none.headers['mcp-protocol-version'], '2026-07-28', 'missing header: the default')
  const legacy = await call(app, { url: '/tools', headers: { 'MCP-PROTOCOL-VERSION': '2025-11-25' } })
  t.equal(legacy.headers['mcp-protocol-version'], '2025-11-25', 'the name is case-insensitive')
  const bad = await call(app, { url: '/tools', headers: { 'mcp-protocol-version': '2024-11-05' } })
  t.equal(bad.status, 400)
  t.same(bad.body, {
    code: -32022,
    message: 'Unsupported protocol version: 2024-11-05',
    data: { supported: ['2026-07-28', '2025-11-25', '2025-06-18'], requested: '2024-11-05' }
  })
  t.equal(bad.headers['mcp-protocol-version'], '2026-07-28', 'errors carry the header too')
})

t.test('a configured default version applies to requests without the header', async (t) => {
  const { app } = await build(t, { defaultProtocolVersion: '2025-06-18' })
  const res = await call(app, { url: '/tools' })
  t.equal(res.headers['mcp-protocol-version'], '2025-06-18')
  t.notOk('resultType' in res.body)
})

t.test('every route answers with Mcp-Protocol-Version and Mcp-Request-Id', async (t) => {
  const { app } = await build(t)
  const requests = [
    { url: '/discover' },
    { url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } },
    { url: '/tools' },
    { url: '/prompts' },
    { url: '/resources' },
    { url: '/resources/templates' },
    { url: '/openapi.json' },
    { url: '/nowhere' },
    { method: 'POST' as const, url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'info' } },
    { method: 'DELETE' as const, url: '/tools' }
  ]
  for (const r of requests) {
    const res = await app.inject({ ...r, headers: { 'mcp-request-id': 'req-42' } })
    t.equal(res.headers['mcp-protocol-version'], '2026-07-28', `${r.url} version`)
    t.equal(res.headers['mcp-request-id'], 'req-42', `${r.url} request id`)
  }
})

const GENERATED = /^[\w-]{12}\.[0-9a-z]+$/

t.test('Mcp-Request-Id: generated when absent, refused when malformed', async (t) => {
  const { app } = await build(t)
  const gen = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.match(gen.headers['mcp-request-id'], GENERATED, 'this process\'s random prefix and a sequence number')
  const other = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.not(other.headers['mcp-request-id'], gen.headers['mcp-request-id'])
  for (const bad of ['x'.repeat(129), 'has space']) {
    const res = await call(app, { url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-request-id': bad } })
    t.same([res.status, res.body.code], [400, -32600], JSON.stringify(bad))
    t.not(res.headers['mcp-request-id'], bad, 'a malformed id is never echoed')
    t.match(res.headers['mcp-request-id'], GENERATED)
  }
})

t.test('the modern _meta envelope', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'whoami' }, (_args, ctx) => ({
    structuredContent: { version: ctx.protocolVersion, era: ctx.era, caps: ctx.clientCapabilities ?? null, requestId: ctx.requestId }
  }))
  const { app } = await build(t, { mcp })
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': { elicitation: {} }
  }
  const ok = await call(app, {
    method: 'POST',
    url: '/tools/whoami/calls',
    payload: { _meta: envelope },
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-request-id': 'r1' }
  })
  t.same(ok.body.structuredContent, { version: '2026-07-28', era: 'modern', caps: { elicitation: {} }, requestId: 'r1' })
  const mismatch = await call(app, {
    method: 'POST',
    url: '/tools/whoami/calls',
    payload: { _meta: envelope },
    headers: { 'mcp-protocol-version': '2025-11-25' }
  })
  t.same([mismatch.status, mismatch.body.code], [400, -32020])
  t.match(mismatch.body.message, /does not match/)
  const fromMeta = await call(app, {
    method: 'POST',
    url: '/tools/whoami/calls',
    payload: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } }
  })
  t.equal(fromMeta.body.structuredContent.version, '2025-11-25', 'without the header, the envelope names the version')
  t.equal(fromMeta.headers['mcp-protocol-version'], '2025-11-25')
  t.notOk('resultType' in fromMeta.body)
  const unsupported = await call(app, {
    method: 'POST',
    url: '/tools/whoami/calls',
    payload: { _meta: { 'io.modelcontextprotocol/protocolVersion': '1.0' } }
  })
  t.same([unsupported.status, unsupported.body.code], [400, -32022])
  const notString = await call(app, { method: 'POST', url: '/tools/whoami/calls', payload: { _meta: { 'io.modelcontextprotocol/protocolVersion': 7 } } })
  t.same([notString.status, notString.body.code], [400, -32602])
  const badCaps = await call(app, { method: 'POST', url: '/tools/whoami/calls', payload: { _meta: { 'io.modelcontextprotocol/clientCapabilities': 'all' } } })
  t.same([badCaps.status, badCaps.body.code], [400, -32602])
  const getMismatch = await call(app, {
    url: '/tools',
    headers: { 'mcp-protocol-version': '2025-06-18', 'mcp-meta': JSON.stringify(envelope) }
  })
  t.same([getMismatch.status, getMismatch.body.code], [400, -32020], 'GET routes check the envelope in Mcp-Meta')
  const getFromMeta = await call(app, { url: '/tools', headers: { 'mcp-meta': '{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}' } })
  t.notOk('resultType' in getFromMeta.body)
})

t.test('legacy clients get the capabilities they declared in initialize', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'caps' }, (_args, ctx) => ({ structuredContent: { caps: ctx.clientCapabilities ?? null } }))
  const { app } = await build(t, { mcp })
  const headers = { 'mcp-protocol-version': '2025-11-25' }
  const before = await call(app, { method: 'POST', url: '/tools/caps/calls', payload: {}, headers })
  t.same(before.body.structuredContent, { caps: null })
  await app.inject({
    method: 'POST',
    url: '/initialize',
    headers,
    payload: { protocolVersion: '2025-11-25', capabilities: { roots: {} }, clientInfo: { name: 'c', version: '1' } }
  })
  const after = await call(app, { method: 'POST', url: '/tools/caps/calls', payload: {}, headers })
  t.same(after.body.structuredContent, { caps: { roots: {} } })
})

t.test('on POST, _meta may come from Mcp-Meta, but not from both places', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'meta' }, (_a, ctx) => JSON.stringify(ctx.meta ?? null))
  const { app } = await build(t, { mcp })
  const header = await call(app, { method: 'POST', url: '/tools/meta/calls', payload: {}, headers: { 'mcp-meta': '{"trace":"h"}' } })
  t.equal(header.body.content[0].text, '{"trace":"h"}')
  const both = await call(app, { method: 'POST', url: '/tools/meta/calls', payload: { _meta: { trace: 'b' } }, headers: { 'mcp-meta': '{"trace":"h"}' } })
  t.same([both.status, both.body.message], [400, 'Send _meta in the body or in the Mcp-Meta header, not both'])
  const bad = await call(app, { method: 'POST', url: '/tools/meta/calls', payload: {}, headers: { 'mcp-meta': 'nope' } })
  t.same([bad.status, bad.body.code], [400, -32602])
  const envelope = '{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}'
  const level = await app.inject({ method: 'POST', url: '/logLevel', payload: { level: 'info' }, headers: { 'mcp-meta': envelope } })
  t.same([level.statusCode, level.headers['mcp-protocol-version']], [202, '2025-06-18'], 'routes without retry parameters read it too')
  const levelBoth = await call(app, { method: 'POST', url: '/logLevel', payload: { level: 'info', _meta: {} }, headers: { 'mcp-meta': envelope } })
  t.same([levelBoth.status, levelBoth.body.message], [400, 'Send _meta in the body or in the Mcp-Meta header, not both'])
})

t.test('Mcp-Meta reaches the handler; a bad one is 400', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.resource({ uri: 'x:meta', name: 'meta' }, (_uri, ctx) => JSON.stringify(ctx.meta ?? null))
  const { app } = await build(t, { mcp })
  const ok = await call(app, { url: '/resources/x%3Ameta', headers: { 'mcp-meta': '{"trace":"abc"}' } })
  t.same(JSON.parse(ok.body.contents[0].text), { trace: 'abc' })
  const b64 = await call(app, {
    url: '/resources/x%3Ameta',
    headers: { 'mcp-meta': `=?base64?${Buffer.from('{"who":"Zoë"}').toString('base64')}?=` }
  })
  t.same(JSON.parse(b64.body.contents[0].text), { who: 'Zoë' })
  for (const bad of ['[1]', '"s"', 'null', '{']) {
    const res = await call(app, { url: '/resources/x%3Ameta', headers: { 'mcp-meta': bad } })
    t.same([res.status, res.body.code], [400, -32602], bad)
    t.match(res.body.message, /^Invalid Mcp-Meta header/)
  }
})

t.test('unknown paths are 404 -32601; wrong methods 405 with Allow', async (t) => {
  const { app } = await build(t)
  const unknown = await call(app, { url: '/nothing/here' })
  t.same([unknown.status, unknown.body.code], [404, -32601])
  const cases: [string, string, string][] = [
    ['DELETE', '/tools', 'GET, HEAD'],
    ['GET', '/tools/echo/calls', 'POST'],
    ['PUT', '/prompts/greeting', 'GET, HEAD, POST'],
    ['GET', '/initialize', 'POST'],
    ['POST', '/ping', 'GET, HEAD'],
    ['GET', '/resources/subscribe', 'POST']
  ]
  for (const [method, url, allow] of cases) {
    const res = await call(app, { method: method as 'GET', url })
    t.equal(res.status, 405, `${method} ${url}`)
    t.equal(res.headers.allow, allow, `${method} ${url} Allow`)
    t.equal(res.body.code, -32601)
  }
  const head = await app.inject({ method: 'HEAD', url: '/tools' })
  t.equal(head.statusCode, 200, 'HEAD works where GET does')
})

t.test('unexpected exceptions are 500 -32603 with no details', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.prompt({ name: 'crash' }, () => {
    throw new TypeError('Cannot read properties of undefined (reading "password")')
  })
  const { app } = await build(t, { mcp })
  const res = await call(app, { url: '/prompts/crash' })
  t.same([res.status, res.body], [500, { code: -32603, message: 'Internal error' }])
  t.notMatch(res.raw, /password|stack/)
})
