import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import { apiKeyRing, parseApiKeys, type ApiKey } from '../../src/auth/api-keys.js'
import { apiKeysFromConfig, loadConfig } from '../../src/config.js'
import { McpServer } from '../../src/core/mcp-server.js'
import { ConfigurationError } from '../../src/errors.js'
import { buildServer, type BuildServerOptions } from '../../src/server.js'

const ISSUER = 'https://auth.example.test'
const AUDIENCE = 'https://mcp.example.test'
const METADATA = `${AUDIENCE}/.well-known/oauth-protected-resource`
// Distinct random keys: a test that looks for one in a log must not find it by chance.
const CI = randomBytes(32).toString('base64')
const BOT = randomBytes(32).toString('hex')
const WRONG = randomBytes(32).toString('base64url')
const KEYS: ApiKey[] = [
  { principal: 'ci', key: CI, scopes: ['mcp:admin', 'mcp:write'] },
  { principal: 'bot', key: BOT, scopes: ['mcp:admin'] }
]
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
const TASKS_HEADER = { 'mcp-meta': JSON.stringify(TASKS) }

/** whoami (no scope), admin (needs mcp:admin and mcp:write), a task, a resource to subscribe to. */
function catalogue(): McpServer {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'whoami' }, (_args, ctx) => {
    // The handler sees no credential (no passthrough): the header is gone once read.
    const reply = (ctx as unknown as { reply?: { request: { headers: object } } }).reply
    const { id, subject, scopes, anonymous } = ctx.principal
    return JSON.stringify({ id, subject, scopes, anonymous, authorization: 'authorization' in (reply?.request.headers ?? {}) })
  })
  mcp.tool({ name: 'admin', scopes: ['mcp:admin', 'mcp:write'] }, () => 'done')
  mcp.tool({ name: 'job', task: 'required', taskTtlMs: 60_000 }, () => 'finished')
  mcp.resource({ uri: 'x:r', name: 'r' }, () => 'r')
  return mcp
}

interface Served {
  base: string
  mcp: McpServer
  log: () => string
}

/** A server on a real socket on 127.0.0.1, its log (every level) captured, closed when the test ends. */
async function serve(t: Test, options: Partial<BuildServerOptions>): Promise<Served> {
  let log = ''
  const mcp = options.mcp ?? catalogue()
  const app = await buildServer({ ...options, mcp, logger: { level: 'trace', stream: { write: (line: string) => void (log += line) } } })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, mcp, log: () => log }
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

async function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const headers: Record<string, string> = { ...init.headers }
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url, { method: init.method ?? (init.body === undefined ? 'GET' : 'POST'), headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text), text }
}

const whoami = async (base: string, headers: Record<string, string>) => {
  const res = await send(`${base}/tools/whoami/calls`, { body: {}, headers })
  return { ...res, who: res.status === 200 ? JSON.parse(res.body.content[0].text) : undefined }
}

/** tools/call on /mcp as a 2026-07-28 client sends it. */
const rpcCall = (base: string, name: string, headers: Record<string, string>) =>
  send(`${base}/mcp`, {
    headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name, ...headers },
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name, arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } }
    }
  })

t.test('a right key is its principal, on the routes and on /mcp; the header does not reach the handler', async (t) => {
  const { base } = await serve(t, { apiKeys: KEYS })
  const res = await whoami(base, bearer(CI))
  t.equal(res.status, 200)
  t.same(res.who, { id: 'apikey:ci', subject: 'ci', scopes: ['mcp:admin', 'mcp:write'], anonymous: false, authorization: false })
  const lower = await whoami(base, { authorization: `bearer ${BOT}` })
  t.same([lower.status, lower.who.id, lower.who.scopes], [200, 'apikey:bot', ['mcp:admin']], 'the scheme is case-insensitive')

  const rpc = await rpcCall(base, 'whoami', bearer(BOT))
  t.equal(rpc.status, 200)
  t.equal(JSON.parse(rpc.body.result.content[0].text).id, 'apikey:bot', '/mcp: the same principal')
  const refused = await rpcCall(base, 'whoami', bearer(WRONG))
  t.equal(refused.status, 401, '/mcp needs a key too')
  t.same(refused.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid API key' } })
  t.equal(refused.headers.get('www-authenticate'), 'Bearer realm="mcp", error="invalid_token"')
})

t.test('no key, a wrong key, another scheme: 401 with the Bearer challenge, no resource_metadata', async (t) => {
  const { base } = await serve(t, { apiKeys: KEYS })
  const none = await send(`${base}/tools`)
  t.same([none.status, none.body], [401, { code: -32600, message: 'Authorization required: send an API key as "Authorization: Bearer <token>"' }])
  t.equal(none.headers.get('www-authenticate'), 'Bearer realm="mcp"')
  t.equal(none.headers.get('mcp-protocol-version'), '2026-07-28')
  const wrong = await send(`${base}/tools`, { headers: bearer(WRONG) })
  t.same([wrong.status, wrong.body], [401, { code: -32600, message: 'Invalid API key' }])
  t.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="mcp", error="invalid_token"')
  const prefix = await send(`${base}/tools`, { headers: bearer(CI.slice(0, -1)) })
  t.equal(prefix.status, 401, 'a key less its last character is no key')
  const basic = await send(`${base}/tools`, { headers: { authorization: `Basic ${Buffer.from(`ci:${CI}`).toString('base64')}` } })
  t.same([basic.status, basic.headers.get('www-authenticate')], [401, 'Bearer realm="mcp"'], 'only Bearer')
  const openapi = await send(`${base}/openapi.json`, { headers: bearer(CI) })
  t.same(openapi.body.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer', description: 'API key' }, 'the document says how to authenticate')
  t.same(openapi.body.security, [{ bearer: [] }])
})

t.test('each key is its own principal: one never sees the other\'s task or notifications', async (t) => {
  const { base, mcp } = await serve(t, { apiKeys: KEYS })
  const started = await send(`${base}/tools/job/calls`, { body: { _meta: TASKS }, headers: bearer(CI) })
  t.equal(started.status, 202)
  const task = `${base}/tasks/${started.body.taskId}`
  t.equal((await send(task, { headers: { ...bearer(CI), ...TASKS_HEADER } })).status, 200, 'its owner sees the task')
  const other = await send(task, { headers: { ...bearer(BOT), ...TASKS_HEADER } })
  t.same([other.status, other.body.code], [404, -32602], 'the other key does not')

  t.equal((await send(`${base}/resources/subscribe`, { body: { uri: 'x:r' }, headers: { ...bearer(CI), 'mcp-protocol-version': '2025-11-25' } })).status, 202)
  await mcp.resourceUpdated('x:r')
  const forCi = await send(`${base}/notifications`, { headers: bearer(CI) })
  t.same(forCi.body, [{ method: 'notifications/resources/updated', params: { uri: 'x:r' } }])
  t.same((await send(`${base}/notifications`, { headers: bearer(BOT) })).body, [], 'bot subscribed to nothing')
})

t.test('a key\'s scopes count as a token\'s do', async (t) => {
  const { base } = await serve(t, { apiKeys: KEYS })
  const ok = await send(`${base}/tools/admin/calls`, { body: {}, headers: bearer(CI) })
  t.same([ok.status, ok.body.content[0].text], [200, 'done'])
  const short = await send(`${base}/tools/admin/calls`, { body: {}, headers: bearer(BOT) })
  t.same([short.status, short.body], [403, { code: -32600, message: 'Insufficient scope: tool admin requires mcp:admin mcp:write' }])
  t.equal(short.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="mcp:admin mcp:write"')
  const rpc = await rpcCall(base, 'admin', bearer(BOT))
  t.same([rpc.status, rpc.body.error.message], [403, 'Insufficient scope: tool admin requires mcp:admin mcp:write'], '/mcp too')
})

t.test('with OAuth too: a key is its principal, any other bearer is verified as a JWT', async (t) => {
  const pair = await generateKeyPair('ES256', { extractable: true })
  const jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] }
  const { base } = await serve(t, { apiKeys: KEYS, oauth: { issuer: ISSUER, audience: AUDIENCE, jwks } })
  const jwt = await new SignJWT({ sub: 'ada', scope: 'mcp:admin mcp:write' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setExpirationTime('5m')
    .sign(pair.privateKey)
  t.same((await whoami(base, bearer(jwt))).who.id, `${ISSUER}|ada`, 'a token')
  t.same((await whoami(base, bearer(CI))).who.id, 'apikey:ci', 'a key')
  t.equal((await send(`${base}/tools/admin/calls`, { body: {}, headers: bearer(jwt) })).status, 200)
  const short = await send(`${base}/tools/admin/calls`, { body: {}, headers: bearer(BOT) })
  t.same([short.status, short.headers.get('www-authenticate')], [403, `Bearer error="insufficient_scope", scope="mcp:admin mcp:write", resource_metadata="${METADATA}"`])
  const wrong = await send(`${base}/tools`, { headers: bearer(WRONG) })
  t.same([wrong.status, wrong.body.message], [401, 'Invalid access token'], 'neither a key nor a JWT')
  t.equal(wrong.headers.get('www-authenticate'), `Bearer realm="mcp", error="invalid_token", resource_metadata="${METADATA}"`)
  const none = await send(`${base}/tools`)
  t.same([none.status, none.body.message], [401, 'Authorization required: send an API key or an OAuth access token as "Authorization: Bearer <token>"'])
  const openapi = await send(`${base}/openapi.json`, { headers: bearer(CI) })
  t.same(openapi.body.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer', description: `API key, or OAuth 2.1 access token; metadata: ${METADATA}` })
})

t.test('with a rate limit, an address that keeps guessing gets 429 before its next key is looked at', async (t) => {
  const { base } = await serve(t, { apiKeys: KEYS, rateLimit: { max: 2, timeWindowMs: 3_600_000 } })
  for (let i = 0; i < 2; i++) t.equal((await send(`${base}/tools`, { headers: bearer(WRONG) })).status, 401, `guess ${i + 1}`)
  const third = await send(`${base}/tools`, { headers: bearer(CI) })
  t.equal(third.status, 429, 'even a right key, once the address is over its limit')
  t.ok(Number(third.headers.get('retry-after')) > 0, 'with Retry-After')
})

t.test('keys never reach the log: a right one, a wrong one, at start-up', async (t) => {
  const { base, log } = await serve(t, { apiKeys: KEYS })
  t.equal((await whoami(base, bearer(CI))).status, 200)
  t.equal((await send(`${base}/tools`, { headers: bearer(WRONG) })).status, 401)
  t.equal((await rpcCall(base, 'whoami', bearer(BOT))).status, 200)
  t.match(log(), /"principals":\["ci","bot"\].*"MCP: API keys accepted"/, 'the start names the principals')
  t.match(log(), /"reason":"unknown key".*"API key rejected"/, 'a refusal is logged, with no credential')
  t.match(log(), /incoming request/, 'the requests were logged')
  for (const [name, key] of [['right', CI], ['wrong', WRONG], ['/mcp', BOT]]) t.notOk(log().includes(key!), `the ${name} key is not in the log`)
})

t.test('bad keys stop the start, naming the principal and never the key', async (t) => {
  const secret = 'short-secret-xyz'
  const cases: [ApiKey[], RegExp][] = [
    [[{ principal: 'ci', key: secret }], /principal ci: the key is shorter than 32 characters/],
    [[{ principal: 'ci', key: CI }, { principal: 'ci', key: BOT }], /principal ci has more than one key/],
    [[{ principal: 'ci', key: CI }, { principal: 'bot', key: CI }], /principal bot: the same key as another principal/],
    [[{ principal: 'ci', key: `${secret}${secret},${secret}` }], /principal ci: the key may hold only/],
    [[{ principal: 'a|b', key: CI }], /the principal of key 1 must be 1-128 of/],
    [[{ principal: 'ci', key: CI, scopes: ['a b'] }], /principal ci: a scope is empty or has a space/],
    [[], /the list is empty/]
  ]
  for (const [keys, message] of cases) {
    const err = await buildServer({ mcp: catalogue(), logger: false, apiKeys: keys }).catch((e: unknown) => e)
    t.type(err, ConfigurationError)
    t.match((err as Error).message, message)
    t.notOk((err as Error).message.includes(secret) || (err as Error).message.includes(CI), 'the key is not in the message')
  }
  const both = await buildServer({ mcp: catalogue(), logger: false, apiKeys: KEYS, authenticate: async () => ({ id: 'x', scopes: [], anonymous: false }) }).catch((e: unknown) => e)
  t.match((both as Error).message, /give either apiKeys or authenticate, not both/)
  const oauthToo = await buildServer({ mcp: catalogue(), logger: false, oauth: { issuer: ISSUER, audience: AUDIENCE, jwks: { keys: [] } }, authenticate: async () => ({ id: 'x', scopes: [], anonymous: false }) }).catch((e: unknown) => e)
  t.match((oauthToo as Error).message, /give either oauth or authenticate, not both/)
})

t.test('the lookup compares with every key and finds the one that matches', async (t) => {
  const lookup = apiKeyRing(KEYS)
  t.equal(lookup(CI)?.id, 'apikey:ci')
  t.equal(lookup(BOT)?.id, 'apikey:bot', 'the last key too')
  t.equal(lookup(WRONG), undefined)
  t.equal(lookup(''), undefined)
  t.ok(Object.isFrozen(lookup(CI)), 'the principal cannot be changed by a handler')
})

t.test('MCP_API_KEYS and MCP_API_KEYS_FILE: entries, scopes with colons, comments', async (t) => {
  t.same(parseApiKeys(` ci:${CI}:mcp:admin  mcp:write , bot:${BOT}`, 'X'), [
    { principal: 'ci', key: CI, scopes: ['mcp:admin', 'mcp:write'] },
    { principal: 'bot', key: BOT }
  ])
  t.throws(() => parseApiKeys(`ci:${CI},${BOT}`, 'MCP_API_KEYS'), /MCP_API_KEYS: entry 2 is not principal:key or principal:key:scopes/)
  t.throws(() => parseApiKeys(' , ', 'MCP_API_KEYS'), /MCP_API_KEYS: no key in it/)

  const dir = mkdtempSync(join(tmpdir(), 'api-keys-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'keys')
  writeFileSync(file, `# the CI runner, read-only, for now\nci:${CI}:mcp:admin\n\n  # a bot\nbot:${BOT}\n`)
  t.same(apiKeysFromConfig(loadConfig({ MCP_API_KEYS_FILE: file })), [
    { principal: 'ci', key: CI, scopes: ['mcp:admin'] },
    { principal: 'bot', key: BOT }
  ])
  const env = { MCP_API_KEYS: `ops:${WRONG}`, MCP_API_KEYS_FILE: file }
  t.same(apiKeysFromConfig(loadConfig(env))!.map((k) => k.principal), ['ops', 'ci', 'bot'], 'both, the variable first')
  t.same(apiKeysFromConfig(loadConfig({}), [{ principal: 'cli', key: CI }]), [{ principal: 'cli', key: CI }], 'and those given besides (--api-key)')
  t.equal(apiKeysFromConfig(loadConfig({})), undefined, 'none: keys are off')
  t.throws(() => apiKeysFromConfig(loadConfig({ MCP_API_KEYS: `ci:${CI}` }), [{ principal: 'ci', key: BOT }]), /principal ci has more than one key/)

  const refused = (env: Record<string, string>) => {
    try {
      loadConfig(env)
    } catch (err) {
      return (err as Error).message
    }
    return 'started'
  }
  t.match(refused({ MCP_API_KEYS: 'ci:tooshort' }), /Invalid configuration:\n {2}API keys: principal ci: the key is shorter than 32 characters/)
  t.notMatch(refused({ MCP_API_KEYS: 'ci:tooshort' }), /tooshort/)
  t.match(refused({ MCP_API_KEYS: `ci:${CI},ci:${BOT}` }), /principal ci has more than one key/)
  t.match(refused({ MCP_API_KEYS_FILE: join(dir, 'nowhere') }), /MCP_API_KEYS_FILE cannot be read: ENOENT/)
  writeFileSync(join(dir, 'empty'), '# nothing yet\n')
  t.match(refused({ MCP_API_KEYS_FILE: join(dir, 'empty') }), /MCP_API_KEYS_FILE: no key in it/, 'a file without keys does not open the server')
})
