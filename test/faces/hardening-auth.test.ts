import t from 'tap'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import { McpServer } from '../../src/core/mcp-server.js'
import { backingOff } from '../../src/auth/verify.js'
import { authFailureLimit } from '../../src/plugins/rate-limit.js'
import { buildServer } from '../../src/server.js'
import { build, call } from '../helpers/helper.js'

const ISSUER = 'https://auth.example.test'
const AUDIENCE = 'https://mcp.example.test'
const rsa = await generateKeyPair('RS256', { extractable: true })
const other = await generateKeyPair('RS256', { extractable: true })
const JWKS = { keys: [{ ...(await exportJWK(rsa.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }

function token(scope: string, kid = 'k1', key = rsa.privateKey): Promise<string> {
  return new SignJWT({ sub: 'alice', scope })
    .setProtectedHeader({ alg: 'RS256', kid })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(key)
}

function catalogue(): McpServer {
  const mcp = new McpServer({ name: 't', version: '1' })
  let runs = 0
  mcp.tool({ name: 'write', scopes: ['notes:write'] }, () => `run ${++runs}`)
  return mcp
}

t.test('JWKS: random kids while the authorization server fails make one fetch, not one per request', async (t) => {
  let fetches = 0
  const jwks = createServer((_req, res) => {
    fetches++
    res.writeHead(500).end('down')
  })
  jwks.listen(0, '127.0.0.1')
  await once(jwks, 'listening')
  t.teardown(() => jwks.close())
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`
  const { app } = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwksUrl } })
  for (let i = 0; i < 5; i++) {
    const res = await call(app, { method: 'POST', url: '/tools/write/calls', payload: {}, headers: { authorization: `Bearer ${await token('notes:write', `kid-${i}`)}` } })
    t.equal(res.status, 503, `request ${i}: 503 while the keys are unavailable`)
    t.equal(res.headers['retry-after'], '5', 'with Retry-After')
  }
  t.equal(fetches, 1, 'one outbound fetch for five requests')
})

t.test('backingOff: waits 1 s after a failure, doubling, and a success resets it', async (t) => {
  let clock = 0
  let fail = true
  let calls = 0
  const remote = async () => {
    calls++
    if (fail) throw new TypeError('fetch failed')
    return new Uint8Array(32)
  }
  const get = backingOff(remote as never, () => clock)
  const attempt = async () => await get({ alg: 'RS256' }, {} as never)
  await t.rejects(attempt(), /fetch failed/)
  await t.rejects(attempt(), /fetch failed/, 'within the second: the same failure, no fetch')
  t.equal(calls, 1)
  clock = 1000
  await t.rejects(attempt(), /fetch failed/, 'after it: fetched again')
  t.equal(calls, 2)
  clock = 2500
  await t.rejects(attempt(), /fetch failed/, 'now 2 s to wait')
  t.equal(calls, 2)
  clock = 3000
  fail = false
  t.ok(await attempt(), 'a success')
  t.ok(await attempt(), 'and no more waiting')
  t.equal(calls, 4)
})

t.test('refused authentications are rate-limited per address, before the token is checked', async (t) => {
  const { app } = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwks: JWKS }, rateLimit: { max: 3 } })
  const forged = await token('notes:write', 'k1', other.privateKey)
  for (let i = 0; i < 3; i++) {
    const res = await call(app, { method: 'POST', url: '/tools/write/calls', payload: {}, headers: { authorization: `Bearer ${forged}` } })
    t.equal(res.status, 401, `refusal ${i + 1}: 401`)
  }
  const limited = await call(app, { method: 'POST', url: '/tools/write/calls', payload: {}, headers: { authorization: `Bearer ${forged}` } })
  t.equal(limited.status, 429, 'then 429')
  t.ok(Number(limited.headers['retry-after']) >= 1, 'with Retry-After')
  t.match(limited.body.message, /refused authentications/)
})

t.test('authFailureLimit: the window rolls over; no options, no limit', async (t) => {
  t.equal(authFailureLimit(undefined), undefined)
  t.equal(authFailureLimit({ max: 0 }), undefined)
  let clock = 0
  const limit = authFailureLimit({ max: 1, timeWindowMs: 1000 }, () => clock)!
  limit.check('a')
  limit.failed('a')
  t.throws(() => limit.check('a'), /Too many refused authentications/, 'over')
  limit.check('b')
  clock = 1000
  limit.check('a')
  t.pass('a new window')
})

t.test('a replay by Mcp-Request-Id checks scopes first; a streamed call is refused before the stream', async (t) => {
  const { app } = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwks: JWKS } })
  const writer = { authorization: `Bearer ${await token('notes:write')}`, 'mcp-request-id': 'call-1' }
  const first = await call(app, { method: 'POST', url: '/tools/write/calls', payload: {}, headers: writer })
  t.equal(first.body.content[0].text, 'run 1', 'the writer ran it')
  const reader = { authorization: `Bearer ${await token('notes:read')}`, 'mcp-request-id': 'call-1' }
  const replay = await call(app, { method: 'POST', url: '/tools/write/calls', payload: {}, headers: reader })
  t.equal(replay.status, 403, 'the same principal without the scope: 403, not the stored result')
  t.match(replay.headers['www-authenticate'], /insufficient_scope/)
  t.notOk(replay.headers['idempotent-replayed'], 'nothing replayed')

  const streamed = await call(app, {
    method: 'POST',
    url: '/tools/write/calls',
    payload: {},
    headers: { authorization: reader.authorization, accept: 'text/event-stream' }
  })
  t.equal(streamed.status, 403, 'a stream refused for scope is a 403')
  t.match(streamed.headers['content-type'], /application\/json/, 'not an event stream')
  t.match(streamed.headers['www-authenticate'], /error="insufficient_scope".*resource_metadata=/, 'with the challenge')
  const unknown = await call(app, { method: 'POST', url: '/tools/nope/calls', payload: {}, headers: { authorization: reader.authorization } })
  t.equal(unknown.status, 404, 'an unknown tool is still 404')
})

t.test('two Authorization headers are refused', async (t) => {
  const app = await buildServer({ logger: false, mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwks: JWKS } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  const good = await token('notes:write')
  const text = await new Promise<string>((resolve) => {
    const s = connect(port, '127.0.0.1')
    let out = ''
    s.on('data', (c) => (out += c.toString()))
    s.on('close', () => resolve(out))
    s.write(`GET /ping HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${good}\r\nAuthorization: Bearer other\r\nConnection: close\r\n\r\n`)
  })
  t.match(text, /^HTTP\/1.1 401/, '401')
  t.match(text, /error="invalid_request"/, 'invalid_request')
  t.match(text, /one Authorization header/)
})

t.test('access_token values in the query are not written to the request log', async (t) => {
  const lines: string[] = []
  const { app } = await build(t, { logger: { level: 'info', stream: { write: (l: string) => lines.push(l) } } as never })
  await app.inject({ url: '/ping?x=1&access_token=SECRET-VALUE&y=2' })
  const log = lines.join('')
  t.notMatch(log, 'SECRET-VALUE', 'the token is not logged')
  t.match(log, 'access_token=[redacted]&y=2', 'the rest of the URL is')
})

t.test('logger: true (Fastify\'s own logger, to standard output) redacts the same way', async (t) => {
  // Not made ready: nothing is logged here, the serializer it would use is read instead.
  const app = await buildServer({ mcp: new McpServer({ name: 't', version: '1' }), logger: true })
  t.teardown(() => app.close())
  // pino keeps a logger's serializers under Symbol(pino.serializers).
  const log = app.log as unknown as Record<symbol, { req: (r: unknown) => { url: string } }>
  const serialize = log[Object.getOwnPropertySymbols(log).find((s) => s.description === 'pino.serializers')!]!.req
  t.equal(serialize({ method: 'GET', url: '/ping?access_token=SECRET-VALUE&y=2', host: 'h', ip: '127.0.0.1' }).url, '/ping?access_token=[redacted]&y=2')
})

t.test('RFC 9728 metadata at the path-inserted URL of an audience with a path', async (t) => {
  const root = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: `${AUDIENCE}/mcp`, jwks: JWKS } })
  const inserted = await call(root.app, { url: '/.well-known/oauth-protected-resource/mcp' })
  t.equal(inserted.status, 200)
  t.equal(inserted.body.resource, `${AUDIENCE}/mcp`)
  t.same(inserted.body.scopes_supported, ['notes:write'])
  const prefixed = await build(t, { mcp: catalogue(), prefix: '/mcp-http', oauth: { issuer: ISSUER, audience: `${AUDIENCE}/mcp-http/`, jwks: JWKS } })
  const outside = await call(prefixed.app, { url: '/.well-known/oauth-protected-resource/mcp-http' })
  t.equal(outside.status, 200, 'outside the prefix, served at the root')
  t.same(outside.body.authorization_servers, [ISSUER])
  t.equal((await call(prefixed.app, { url: '/mcp-http/.well-known/oauth-protected-resource' })).status, 200, 'the prefixed URL still works')
  const named = await build(t, { mcp: catalogue(), prefix: '/mcp-http', oauth: { issuer: [ISSUER], audience: `${AUDIENCE}/mcp-http`, jwks: JWKS, authorizationServers: ['https://as.example'], scopesSupported: ['a'] } })
  const published = (await call(named.app, { url: '/.well-known/oauth-protected-resource/mcp-http' })).body
  t.same([published.authorization_servers, published.scopes_supported], [['https://as.example'], ['a']], 'the root copy publishes what the prefixed one does')
  t.same((await call(named.app, { url: '/mcp-http/.well-known/oauth-protected-resource' })).body, published)
  const plain = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwks: JWKS } })
  t.not((await call(plain.app, { url: '/.well-known/oauth-protected-resource/mcp' })).status, 200, 'no path, no inserted URL')
})
