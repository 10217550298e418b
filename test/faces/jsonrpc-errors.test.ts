import t from 'tap'
import { Type } from '@sinclair/typebox'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { McpServer } from '../../src/core/mcp-server.js'
import { errors } from '../../src/errors.js'
import { build, call } from '../helpers/helper.js'
import { LEGACY, MODERN, envelope, rpc } from '../helpers/rpc.js'

const post = (payload: string, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url: '/mcp',
  headers: { 'content-type': 'application/json', ...headers },
  payload
})

t.test('malformed messages: 4xx with the JSON-RPC error envelope, naming the id when there is one', async (t) => {
  const { app } = await build(t, { bodyLimit: 2048 })
  const cases: [string, number, number, string | number | null][] = [
    ['{not json', 400, -32700, null],
    ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600, null],
    ['"text"', 400, -32600, null],
    ['{"id":1,"method":"tools/list"}', 400, -32600, 1],
    ['{"jsonrpc":"2.0","id":1,"method":7}', 400, -32600, null],
    ['{"jsonrpc":"2.0","id":1,"method":""}', 400, -32600, 1],
    ['{"jsonrpc":"2.0","id":"a","method":"tools/list","params":[1]}', 400, -32600, 'a'],
    ['{"jsonrpc":"2.0","id":null,"method":"tools/list"}', 400, -32600, null],
    ['{"jsonrpc":"2.0","id":{},"method":"tools/list"}', 400, -32600, null],
    ['{"jsonrpc":"2.0","id":3}', 400, -32600, null],
    [`{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"${'x'.repeat(3000)}"}}`, 413, -32600, null]
  ]
  for (const [payload, status, code, id] of cases) {
    const res = await call(app, post(payload))
    t.equal(res.status, status, payload.slice(0, 40))
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    t.same([res.body.jsonrpc, res.body.id, res.body.error.code], ['2.0', id, code], payload.slice(0, 40))
  }
  const empty = await call(app, post(''))
  t.same([empty.status, empty.body.error.code], [400, -32600])
  const text = await call(app, post('{}', { 'content-type': 'text/plain' }))
  t.same([text.status, text.body.error.code], [415, -32600])
  const badId = await call(app, post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { 'mcp-request-id': 'bad id' }))
  t.same([badId.status, badId.body.id, badId.body.error.code], [400, null, -32600])
})

t.test('notifications are accepted with 202 and no body; responses must answer a question asked', async (t) => {
  const { app } = await build(t)
  for (const [payload, headers] of [
    ['{"jsonrpc":"2.0","method":"notifications/initialized"}', {}],
    ['{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}', { 'mcp-protocol-version': LEGACY }],
    ['{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}', { 'mcp-protocol-version': MODERN, 'mcp-method': 'notifications/roots/list_changed' }],
    [JSON.stringify({ jsonrpc: '2.0', method: 'notifications/x', params: { _meta: envelope() } }), { 'mcp-protocol-version': MODERN }]
  ] as const) {
    const res = await app.inject(post(payload, headers))
    t.equal(res.statusCode, 202, payload)
    t.equal(res.payload, '')
  }
  // A response names a question the server asked (its /requests id); anything else is not accepted.
  for (const payload of ['{"jsonrpc":"2.0","id":5,"result":{"roots":[]}}', '{"jsonrpc":"2.0","id":"s-1","error":{"code":-1,"message":"no","data":{}}}']) {
    const res = await call(app, post(payload))
    t.same([res.status, res.body.id, res.body.error.code], [404, null, -32602], payload)
    t.match(res.body.error.message, /^Unknown or already answered request: /)
  }
  for (const payload of ['{"jsonrpc":"2.0","id":5,"result":[]}', '{"jsonrpc":"2.0","id":5,"error":{"code":1.5,"message":"no"}}', '{"jsonrpc":"2.0","id":5,"error":{"code":1}}']) {
    const res = await call(app, post(payload))
    t.same([res.status, res.body.error.code], [400, -32600], payload)
  }
  // A 2026-07-28 notification whose Mcp-Method disagrees is refused, with no id to name.
  const res = await call(app, post('{"jsonrpc":"2.0","method":"notifications/x"}', { 'mcp-protocol-version': MODERN, 'mcp-method': 'notifications/y' }))
  t.equal(res.status, 400)
  t.same(res.body, { jsonrpc: '2.0', error: { code: -32020, message: 'Mcp-Method header (notifications/y) does not match the body method (notifications/x)' } })
})

t.test('GET without SSE, DELETE and the other methods: 405 with Allow: GET, POST', async (t) => {
  const { app } = await build(t)
  for (const method of ['GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'] as const) {
    const res = await call(app, { method, url: '/mcp', headers: { 'mcp-session-id': 'whatever', 'mcp-protocol-version': LEGACY } })
    t.equal(res.status, 405, method)
    t.equal(res.headers.allow, 'GET, POST')
    t.same(res.body, { jsonrpc: '2.0', id: null, error: { code: -32601, message: 'Method not allowed', data: { allow: ['GET', 'POST'] } } })
  }
  t.equal((await app.inject({ method: 'HEAD', url: '/mcp' })).statusCode, 405)
})

t.test('the 2026-07-28 envelope: missing or malformed is 400 -32602, an unknown version 400 -32022', async (t) => {
  const { app } = await build(t)
  const meta = envelope()
  const discover = (params: Record<string, unknown>, headers: Record<string, string> = {}, id = 7) =>
    call(app, post(JSON.stringify({ jsonrpc: '2.0', id, method: 'server/discover', params }), { 'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover', ...headers }))
  const invalid: [Record<string, unknown>, RegExp][] = [
    [{}, /missing: _meta/],
    [{ _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } }, /missing: io.modelcontextprotocol\/protocolVersion/],
    [{ _meta: { ...meta, 'io.modelcontextprotocol/clientCapabilities': undefined } }, /clientCapabilities is required/],
    [{ _meta: { ...meta, 'io.modelcontextprotocol/clientCapabilities': [] } }, /clientCapabilities is required/],
    [{ _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': 7 } }, /protocolVersion must be a string/],
    [{ _meta: { ...meta, 'io.modelcontextprotocol/clientInfo': { name: 'x' } } }, /clientInfo must be an object/],
    [{ _meta: { ...meta, 'io.modelcontextprotocol/logLevel': 'loud' } }, /logLevel must be one of/]
  ]
  for (const [params, message] of invalid) {
    const res = await discover(params)
    t.equal(res.status, 400)
    t.match(res.body, { jsonrpc: '2.0', id: 7, error: { code: -32602, message } })
  }
  // clientInfo is a SHOULD; a log level is fine.
  const { 'io.modelcontextprotocol/clientInfo': _, ...noInfo } = meta
  t.equal((await discover({ _meta: { ...noInfo, 'io.modelcontextprotocol/logLevel': 'debug' } })).status, 200)

  const unsupported = await discover({ _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' } }, { 'mcp-protocol-version': 'v999.0.0' }, 301)
  t.equal(unsupported.status, 400)
  t.same(unsupported.body, {
    jsonrpc: '2.0',
    id: 301,
    error: { code: -32022, message: 'Unsupported protocol version: v999.0.0', data: { supported: ['2026-07-28', '2025-11-25', '2025-06-18'], requested: 'v999.0.0' } }
  })
  t.equal(unsupported.headers['mcp-protocol-version'], MODERN, 'the default version answers a refusal')
  const legacyHeader = await rpc(app, 'tools/list', {}, { era: 'legacy', headers: { 'mcp-protocol-version': '2024-11-05' } })
  t.same([legacyHeader.status, legacyHeader.body.error.code, legacyHeader.body.error.data.requested], [400, -32022, '2024-11-05'])
  const initialize = await rpc(app, 'initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy', headers: { 'mcp-protocol-version': 'nope' } })
  t.same([initialize.status, initialize.body.error.code], [400, -32022])
})

t.test('SEP-2243 standard headers: MCP-Protocol-Version, Mcp-Method and Mcp-Name must match the body', async (t) => {
  const mcp = new McpServer({ name: 'h', version: '1' })
  mcp.tool({ name: 'echo', input: Type.Object({ text: Type.String() }) }, ({ text }) => text)
  mcp.resource({ uri: 'file:///données/é.txt', name: 'accented' }, () => 'é')
  const { app } = await build(t, { mcp })
  const echo = { name: 'echo', arguments: { text: 'x' } }
  const refused: [string, Record<string, unknown>, Record<string, string | undefined>, RegExp][] = [
    ['tools/call', echo, { 'mcp-protocol-version': LEGACY }, /MCP-Protocol-Version header \(2025-11-25\) does not match _meta protocol version \(2026-07-28\)/],
    ['tools/call', echo, { 'mcp-protocol-version': undefined }, /MCP-Protocol-Version header is required/],
    ['tools/list', {}, { 'mcp-method': undefined }, /Mcp-Method header is required/],
    ['tools/list', {}, { 'mcp-method': 'prompts/list' }, /does not match the body method/],
    ['tools/list', {}, { 'mcp-method': 'TOOLS/LIST' }, /does not match the body method/],
    ['tools/call', echo, { 'mcp-name': undefined }, /Mcp-Name header is required for tools\/call/],
    ['tools/call', echo, { 'mcp-name': 'wrong_tool' }, /Mcp-Name header does not match params.name/],
    ['tools/call', echo, { 'mcp-name': '=?base64?ZWNobw?=' }, /Invalid Mcp-Name header/],
    ['tools/call', echo, { 'mcp-name': '=?base64?/w==?=' }, /Invalid Mcp-Name header/],
    ['initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'c', version: '1' } }, {}, /initialize is the legacy handshake/]
  ]
  for (const [method, params, headers, message] of refused) {
    const res = method === 'initialize'
      ? await call(app, post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), { 'mcp-protocol-version': MODERN }))
      : await rpc(app, method, params, { headers })
    t.equal(res.status, 400, `${method} ${JSON.stringify(headers)}`)
    t.match(res.body.error, { code: -32020, message })
  }
  const accepted: [string, Record<string, unknown>, Record<string, string>][] = [
    ['tools/call', echo, { 'mcp-name': '  echo\t' }],
    ['tools/call', echo, { 'mcp-name': `=?base64?${Buffer.from('echo').toString('base64')}?=` }],
    ['resources/read', { uri: 'file:///données/é.txt' }, {}],
    ['tools/list', {}, { 'mcp-method': ' tools/list ' }]
  ]
  for (const [method, params, headers] of accepted) {
    const res = await rpc(app, method, params, { headers })
    t.equal(res.status, 200, `${method} ${JSON.stringify(headers)}`)
    t.ok(res.body.result, `${method} ${JSON.stringify(headers)}`)
  }
  // A legacy-era request is not held to them.
  t.equal((await rpc(app, 'tools/call', echo, { era: 'legacy', headers: { 'mcp-method': 'other', 'mcp-name': 'other' } })).status, 200)
  // An envelope naming a legacy version is served in that era; the header must still agree.
  const legacyClaim = { ...envelope(), 'io.modelcontextprotocol/protocolVersion': LEGACY }
  const claimed = await call(app, post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: legacyClaim } })))
  t.same([claimed.status, claimed.headers['mcp-protocol-version'], claimed.body.result.resultType], [200, LEGACY, undefined])
})

t.test('SEP-2243 custom headers: x-mcp-header parameters travel in Mcp-Param-{name} too', async (t) => {
  const mcp = new McpServer({ name: 'p', version: '1' })
  mcp.tool(
    {
      name: 'query',
      input: Type.Object({
        region: Type.String({ 'x-mcp-header': 'Region' }),
        limit: Type.Optional(Type.Integer({ 'x-mcp-header': 'Limit' })),
        options: Type.Optional(Type.Object({ dry: Type.Boolean({ 'x-mcp-header': 'Dry-Run' }) })),
        note: Type.Optional(Type.String({ 'x-mcp-header': 'bad header' })),
        list: Type.Optional(Type.Array(Type.String(), { 'x-mcp-header': 'List' }))
      })
    },
    (args) => JSON.stringify(args)
  )
  const { app } = await build(t, { mcp })
  const query = (args: Record<string, unknown>, headers: Record<string, string>) => rpc(app, 'tools/call', { name: 'query', arguments: args }, { headers })
  const ok: [Record<string, unknown>, Record<string, string>][] = [
    [{ region: 'us-west1' }, { 'mcp-param-region': 'us-west1' }],
    [{ region: 'Hello, 世界' }, { 'mcp-param-region': `=?base64?${Buffer.from('Hello, 世界').toString('base64')}?=` }],
    [{ region: '=?base64?SGVsbG8?' }, { 'mcp-param-region': '=?base64?SGVsbG8?' }],
    [{ region: 'r', limit: 42 }, { 'mcp-param-region': 'r', 'mcp-param-limit': '42.0' }],
    [{ region: 'r', options: { dry: true } }, { 'mcp-param-region': 'r', 'mcp-param-dry-run': 'true' }],
    [{ region: 'r', note: 'n', list: ['a'] }, { 'mcp-param-region': 'r' }]
  ]
  for (const [args, headers] of ok) {
    const res = await query(args, headers)
    t.equal(res.status, 200, JSON.stringify(args))
    t.same(JSON.parse(res.body.result.content[0].text), args)
  }
  const refused: [Record<string, unknown>, Record<string, string>, RegExp][] = [
    [{ region: 'us-west1' }, {}, /The Mcp-Param-Region header is required \(it mirrors region\)/],
    [{ region: 'us-west1' }, { 'mcp-param-region': 'eu-west1' }, /Mcp-Param-Region header does not match the argument region/],
    [{ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8?=' }, /Invalid Mcp-Param-Region header/],
    [{ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVs!!!bG8=?=' }, /Invalid Mcp-Param-Region header/],
    [{ region: 'r', limit: 42 }, { 'mcp-param-region': 'r', 'mcp-param-limit': '43' }, /Limit header does not match the argument limit/],
    [{ region: 'r', limit: 42 }, { 'mcp-param-region': 'r', 'mcp-param-limit': '0x2a' }, /Limit header does not match/],
    [{ region: 'r', options: { dry: false } }, { 'mcp-param-region': 'r', 'mcp-param-dry-run': 'true' }, /argument options.dry/]
  ]
  for (const [args, headers, message] of refused) {
    const res = await query(args, headers)
    t.equal(res.status, 400, JSON.stringify(headers))
    t.match(res.body.error, { code: -32020, message })
  }
  // Declarations that are not well-formed mirror nothing (a boolean schema, a non-string name, no type).
  mcp.tool(
    { name: 'odd', input: Type.Unsafe({ type: 'object', properties: { any: true, num: { 'x-mcp-header': 5, type: 'string' }, untyped: { 'x-mcp-header': 'Untyped' } } }) },
    () => 'ok'
  )
  t.equal((await rpc(app, 'tools/call', { name: 'odd', arguments: { any: 1, num: 'x', untyped: 'y' } })).status, 200)
  // Legacy-era requests and unknown tools are not checked here (the latter is -32602 from the core).
  t.equal((await rpc(app, 'tools/call', { name: 'query', arguments: { region: 'x' } }, { era: 'legacy' })).status, 200)
  t.equal((await rpc(app, 'tools/call', { name: 'nope', arguments: {} })).body.error.code, -32602)
})

t.test('params are validated per method: -32602 in-band, naming the field', async (t) => {
  const { app } = await build(t)
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['tools/call', { arguments: {} }, /Invalid params for tools\/call: name is required/],
    ['prompts/get', { name: 'greeting', arguments: { name: 1 } }, /arguments.name must be string/],
    ['resources/read', { uri: '' }, /uri must NOT have fewer than 1 characters/],
    ['tools/call', { name: 'echo', arguments: { text: 'x' }, inputResponses: null }, /inputResponses must be object/],
    ['completion/complete', { ref: { type: 'ref/prompt' } }, /Invalid params for completion\/complete/],
    ['subscriptions/listen', {}, /notifications is required/]
  ]
  for (const [method, params, message] of cases) {
    const res = await rpc(app, method, params)
    t.equal(res.status, 200, method)
    t.match(res.body.error, { code: -32602, message }, method)
  }
  const legacy = await rpc(app, 'logging/setLevel', { level: 'loud' }, { era: 'legacy' })
  t.match([legacy.status, legacy.body.error.code], [200, -32602])
})

t.test('refusals before the message is read keep their status and challenge, in the envelope', async (t) => {
  const key = await generateKeyPair('RS256', { extractable: true })
  const jwks = { keys: [{ ...(await exportJWK(key.publicKey)), kid: 'k', alg: 'RS256' }] }
  const audience = 'https://mcp.example.test'
  const mcp = new McpServer({ name: 'a', version: '1' })
  mcp.tool({ name: 'admin', scopes: ['mcp:admin'] }, () => 'ok')
  const { app } = await build(t, { mcp, oauth: { issuer: 'https://auth.example.test', audience, jwks }, allowedHosts: ['localhost:80'] })
  const unauthenticated = await call(app, post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}'))
  t.equal(unauthenticated.status, 401)
  t.equal(unauthenticated.headers['www-authenticate'], `Bearer realm="mcp", resource_metadata="${audience}/.well-known/oauth-protected-resource"`)
  t.same([unauthenticated.body.id, unauthenticated.body.error.code], [null, -32600])
  const jwt = await new SignJWT({ sub: 'u', scope: 'mcp:read' })
    .setProtectedHeader({ alg: 'RS256', kid: 'k' })
    .setIssuer('https://auth.example.test')
    .setAudience(audience)
    .setExpirationTime('5m')
    .sign(key.privateKey)
  const scoped = await rpc(app, 'tools/call', { name: 'admin' }, { id: 'x', headers: { authorization: `Bearer ${jwt}` } })
  t.equal(scoped.status, 403, 'an insufficient scope keeps its 403 and challenge')
  t.match(scoped.headers['www-authenticate'], /error="insufficient_scope", scope="mcp:admin", resource_metadata=/)
  t.same([scoped.body.id, scoped.body.error.code], ['x', -32600])
  const host = await call(app, { ...post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}'), headers: { 'content-type': 'application/json', host: 'evil.example' } })
  t.same([host.status, host.body.error.message], [403, 'Host not allowed'])
})

t.test('an authenticate hook that refuses is answered in the envelope too', async (t) => {
  const { app } = await build(t, {
    authenticate: async () => {
      throw errors.forbidden('No entry')
    }
  })
  const res = await call(app, post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}'))
  t.same([res.status, res.body], [403, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'No entry' } }])
})

t.test('the per-principal rate limit covers /mcp too, answered in the envelope', async (t) => {
  const { app } = await build(t, { rateLimit: { max: 2 } })
  for (let i = 0; i < 2; i++) t.equal((await rpc(app, 'tools/list', {}, { era: 'legacy' })).status, 200)
  const limited = await rpc(app, 'tools/list', {}, { era: 'legacy' })
  t.equal(limited.status, 429)
  t.ok(Number(limited.headers['retry-after']) >= 1)
  t.match(limited.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: /Rate limit exceeded/ } })
})
