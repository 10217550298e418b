import t, { type Test } from 'tap'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { Type } from '@sinclair/typebox'
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload } from 'jose'
import { bearerAuth, withResourceMetadata, type BearerAuthOptions } from '../../src/auth/bearer.js'
import { oauthSetup } from '../../src/auth/oauth.js'
import { isLoopbackHost, loopbackOnly } from '../../src/auth/origin.js'
import { hostOriginFromConfig, loadConfig, oauthFromConfig } from '../../src/config.js'
import { McpServer } from '../../src/core/mcp-server.js'
import { buildServer } from '../../src/server.js'
import { ConfigurationError, McpError } from '../../src/errors.js'
import { MemoryStore } from '../../src/store/memory.js'
import { build, call } from '../helpers/helper.js'

const ISSUER = 'https://auth.example.test'
const AUDIENCE = 'https://mcp.example.test'
const METADATA = `${AUDIENCE}/.well-known/oauth-protected-resource`
const CHALLENGE = `Bearer realm="mcp", resource_metadata="${METADATA}"`
const INVALID = `Bearer realm="mcp", error="invalid_token", resource_metadata="${METADATA}"`

type Key = Awaited<ReturnType<typeof generateKeyPair>>['publicKey']
const rsa = await generateKeyPair('RS256', { extractable: true })
const ec = await generateKeyPair('ES256', { extractable: true })
const other = await generateKeyPair('RS256', { extractable: true })
const publicJwk = async (key: Key, kid: string, alg: string): Promise<JWK> => ({ ...(await exportJWK(key)), kid, alg, use: 'sig' })
const JWKS = { keys: [await publicJwk(rsa.publicKey, 'rsa-1', 'RS256'), await publicJwk(ec.publicKey, 'ec-1', 'ES256')] }
const SECRET = 'a shared HMAC secret of at least 32 bytes!'

interface Sign {
  alg?: string
  kid?: string | undefined
  key?: Key | Uint8Array
  exp?: number | string | undefined
}

/** A signed access token: RS256 with `rsa-1`, for AUDIENCE from ISSUER, subject alice, 5 minutes. */
async function token(claims: JWTPayload = {}, sign: Sign = {}): Promise<string> {
  const { alg = 'RS256', key = rsa.privateKey } = sign
  const kid = 'kid' in sign ? sign.kid : 'rsa-1'
  const jwt = new SignJWT({ sub: 'alice', ...claims })
    .setProtectedHeader(kid === undefined ? { alg } : { alg, kid })
    .setIssuer(claims.iss ?? ISSUER)
    .setAudience(claims.aud ?? AUDIENCE)
    .setIssuedAt()
  if (!('exp' in sign) || sign.exp !== undefined) jwt.setExpirationTime(sign.exp ?? '5m')
  return jwt.sign(key)
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)
const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` })

/** whoami (no scope), admin (needs mcp:admin, takes n), a resource to subscribe to. */
function catalogue(): McpServer {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'whoami' }, (_args, ctx) => {
    // Nothing on the handler's side may hold the token (no passthrough).
    const reply = (ctx as unknown as { reply?: { request: { headers: object; raw: { rawHeaders: string[] } } } }).reply
    return JSON.stringify({
      id: ctx.principal.id,
      issuer: ctx.principal.issuer,
      subject: ctx.principal.subject,
      scopes: ctx.principal.scopes,
      anonymous: ctx.principal.anonymous,
      claims: ctx.principal.claims,
      authorization: 'authorization' in (reply?.request.headers ?? {}),
      rawAuthorization: (reply?.request.raw.rawHeaders ?? []).some((h) => h.toLowerCase() === 'authorization')
    })
  })
  mcp.tool({ name: 'admin', scopes: ['mcp:admin', 'mcp:write'], input: Type.Object({ n: Type.Number() }) }, ({ n }) => `n=${n}`)
  mcp.resource({ uri: 'x:r', name: 'r' }, () => 'r')
  return mcp
}

const oauth = (extra: Partial<BearerAuthOptions> = {}) => ({ issuer: ISSUER, audience: AUDIENCE, jwks: JWKS, ...extra })

async function whoami(app: Awaited<ReturnType<typeof build>>['app'], headers: Record<string, string>) {
  const res = await call(app, { method: 'POST', url: '/tools/whoami/calls', payload: {}, headers })
  return { ...res, who: res.status === 200 ? JSON.parse(res.body.content[0].text) : undefined }
}

t.test('a valid token: the principal is iss|sub with its scopes, and the token stays out of reach', async (t) => {
  const { app } = await build(t, { mcp: catalogue(), oauth: oauth() })
  const jwt = await token({ scope: 'mcp:read mcp:admin' })
  const res = await whoami(app, bearer(jwt))
  t.equal(res.status, 200)
  t.equal(res.body.isError, undefined)
  t.notOk(res.headers['www-authenticate'])
  t.equal(res.headers['mcp-protocol-version'], '2026-07-28')
  t.same(
    [res.who.id, res.who.issuer, res.who.subject, res.who.scopes, res.who.anonymous],
    [`${ISSUER}|alice`, ISSUER, 'alice', ['mcp:read', 'mcp:admin'], false]
  )
  t.equal(res.who.claims.aud, AUDIENCE, 'the verified claims reach the handler')
  t.same([res.who.authorization, res.who.rawAuthorization], [false, false], 'the Authorization header is gone')
  t.notOk(res.raw.includes(jwt), 'the token is nowhere in what the handler could see')

  const scp = await whoami(app, bearer(await token({ scp: ['a', 'b', 7] as never, sub: 'bob' })))
  t.same([scp.status, scp.who.id, scp.who.scopes], [200, `${ISSUER}|bob`, ['a', 'b']], 'scp as an array')
  const scpText = await whoami(app, bearer(await token({ scp: 'c d' })))
  t.same([scpText.status, scpText.who.scopes], [200, ['c', 'd']], 'scp as a string')
  const none = await whoami(app, bearer(await token({ scope: 42 as never })))
  t.same([none.status, none.who.scopes], [200, []], 'no usable scope claim: no scopes')
  const es = await whoami(app, { authorization: `bearer ${await token({}, { alg: 'ES256', kid: 'ec-1', key: ec.privateKey })}` })
  t.same([es.status, es.who.id], [200, `${ISSUER}|alice`], 'ES256, and the scheme is case-insensitive')
})

t.test('rejected tokens: 401 -32600 with error="invalid_token", and the reason only in the log', async (t) => {
  let log = ''
  const stream = { write: (line: string) => void (log += line) }
  const { app } = await build(t, { mcp: catalogue(), oauth: oauth(), logger: { level: 'info', stream } })
  const cases: [string, string, string][] = [
    ['expired', await token({}, { exp: now() - 120 }), 'The access token has expired'],
    ['not yet valid', await token({ nbf: now() + 300 }), 'Invalid access token'],
    ['wrong audience', await token({ aud: 'https://other.example.test' }), 'Invalid access token'],
    ['wrong issuer', await token({ iss: 'https://evil.example.test' }), 'Invalid access token'],
    ['unknown kid', await token({}, { kid: 'rsa-9' }), 'Invalid access token'],
    ['signed by another key', await token({}, { key: other.privateKey }), 'Invalid access token'],
    ['no exp', await token({}, { exp: undefined }), 'Invalid access token'],
    ['no sub', await token({ sub: undefined as never }), 'Invalid access token'],
    ['a numeric sub', await token({ sub: 7 as never }), 'Invalid access token'],
    // Distinctive parts: the log check below looks for the second part, which must not occur by chance.
    ['not a JWT', 'not-a-jwt.c2VjcmV0LXBhcnQtb2YtYS10b2tlbg', 'Invalid access token'],
    ['alg: none', `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: 'alice', exp: now() + 300 })}.`, 'Invalid access token'],
    [
      'HS256 signed with the RSA public key as HMAC secret',
      await token({}, { alg: 'HS256', kid: 'rsa-1', key: new TextEncoder().encode(await exportSPKI(rsa.publicKey)) }),
      'Invalid access token'
    ]
  ]
  for (const [name, jwt, message] of cases) {
    const res = await call(app, { url: '/tools', headers: bearer(jwt) })
    t.same([res.status, res.body], [401, { code: -32600, message }], name)
    t.equal(res.headers['www-authenticate'], INVALID, `${name}: challenge`)
    t.notOk(res.raw.includes(jwt), `${name}: the token is not echoed`)
    t.notOk(log.includes(jwt.split('.')[1]!), `${name}: nor logged`)
  }
  t.match(log, /"reason":"ERR_JWT_EXPIRED".*"access token rejected"/)
  t.match(log, /"reason":"ERR_JOSE_ALG_NOT_ALLOWED"/)
  t.match(log, /"reason":"no subject"/)
  const tolerated = await call(app, { url: '/tools', headers: bearer(await token({}, { exp: now() - 10 })) })
  t.equal(tolerated.status, 200, 'expired by less than the 30 s clock tolerance')
})

t.test('missing or malformed credentials: 401 with the Bearer challenge and resource_metadata', async (t) => {
  const { app } = await build(t, { mcp: catalogue(), oauth: oauth() })
  const none = await call(app, { url: '/tools' })
  t.same([none.status, none.body.code], [401, -32600])
  t.match(none.body.message, /Authorization required/)
  t.equal(none.headers['www-authenticate'], CHALLENGE, 'no error code when no credentials were sent (RFC 6750 3.1)')
  t.equal(none.headers['mcp-protocol-version'], '2026-07-28')

  const basic = await call(app, { url: '/tools', headers: { authorization: 'Basic eDp5' } })
  t.same([basic.status, basic.body.code, basic.headers['www-authenticate']], [401, -32600, CHALLENGE], 'another scheme')
  t.match(basic.body.message, /only the Bearer scheme/)
  for (const header of ['Bearer', 'Bearer ', 'Bearer a b', 'Bearer "x"']) {
    const res = await call(app, { url: '/tools', headers: { authorization: header } })
    t.same([res.status, res.body.code], [401, -32600], JSON.stringify(header))
    t.equal(res.headers['www-authenticate'], `Bearer realm="mcp", error="invalid_request", resource_metadata="${METADATA}"`)
  }
  const nowhere = await call(app, { url: '/nowhere' })
  t.same([nowhere.status, nowhere.body.code, nowhere.headers['www-authenticate']], [401, -32600, CHALLENGE], 'no route map for strangers')
})

t.test('per-tool scopes: 403 insufficient_scope before the arguments are looked at', async (t) => {
  const { app } = await build(t, { mcp: catalogue(), oauth: oauth() })
  const partial = await call(app, {
    method: 'POST',
    url: '/tools/admin/calls',
    payload: { arguments: { n: 'not a number' } },
    headers: bearer(await token({ scope: 'mcp:admin' }))
  })
  t.same([partial.status, partial.body], [403, { code: -32600, message: 'Insufficient scope: tool admin requires mcp:admin mcp:write' }])
  t.equal(
    partial.headers['www-authenticate'],
    `Bearer error="insufficient_scope", scope="mcp:admin mcp:write", resource_metadata="${METADATA}"`
  )
  const ok = await call(app, {
    method: 'POST',
    url: '/tools/admin/calls',
    payload: { arguments: { n: 2 } },
    headers: bearer(await token({ scope: 'mcp:write other mcp:admin' }))
  })
  t.same([ok.status, ok.body.content[0].text], [200, 'n=2'])
  t.notOk(ok.headers['www-authenticate'])
  const unscoped = await whoami(app, bearer(await token()))
  t.equal(unscoped.status, 200, 'a tool without scopes needs none')
})

t.test('without authentication there are no scopes to check', async (t) => {
  const { app } = await build(t, { mcp: catalogue() })
  const res = await call(app, { method: 'POST', url: '/tools/admin/calls', payload: { arguments: { n: 1 } } })
  t.same([res.status, res.body.content[0].text], [200, 'n=1'])
  t.notOk(res.headers['www-authenticate'])
  const doc = await call(app, { url: '/.well-known/oauth-protected-resource' })
  t.same([doc.status, doc.body.code], [404, -32601], 'no metadata without oauth')
})

t.test('scopes are checked for a custom authenticate too, with no resource_metadata to add', async (t) => {
  const { app } = await build(t, {
    mcp: catalogue(),
    authenticate: async () => ({ id: 'x|y', scopes: ['mcp:admin'], anonymous: false })
  })
  const res = await call(app, { method: 'POST', url: '/tools/admin/calls', payload: { arguments: { n: 1 } } })
  t.same([res.status, res.body.code], [403, -32600])
  t.equal(res.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="mcp:admin mcp:write"')
})

t.test('the protected resource metadata (RFC 9728) answers without a token', async (t) => {
  const mcp = catalogue()
  const { app } = await build(t, { mcp, oauth: oauth() })
  const doc = await call(app, { url: '/.well-known/oauth-protected-resource' })
  t.equal(doc.status, 200)
  const head = await app.inject({ method: 'HEAD', url: '/.well-known/oauth-protected-resource' })
  t.same([head.statusCode, head.headers['www-authenticate']], [200, undefined], 'HEAD too')
  t.match(doc.headers['content-type'], /^application\/json/)
  t.notOk(doc.headers['www-authenticate'])
  t.same(doc.body, {
    resource: AUDIENCE,
    authorization_servers: [ISSUER],
    scopes_supported: ['mcp:admin', 'mcp:write'],
    bearer_methods_supported: ['header']
  })
  mcp.tool({ name: 'reader', scopes: ['mcp:read', 'mcp:write'] }, () => 'r')
  const later = await call(app, { url: '/.well-known/oauth-protected-resource' })
  t.same(later.body.scopes_supported, ['mcp:admin', 'mcp:read', 'mcp:write'], 'kept current as tools are registered')
  mcp.prompt({ name: 'p' }, () => 'p')
  t.same((await call(app, { url: '/.well-known/oauth-protected-resource' })).body, later.body, 'other changes keep it')

  const openapi = await call(app, { url: '/openapi.json', headers: bearer(await token()) })
  t.equal(openapi.status, 200)
  t.same(openapi.body.components.securitySchemes.bearer, {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: `OAuth 2.1 access token; metadata: ${METADATA}`
  })
  t.same(openapi.body.security, [{ bearer: [] }])
  t.same(openapi.body.paths['/.well-known/oauth-protected-resource'].get.security, [], 'the metadata is public')
})

t.test('the metadata under a prefix, with explicit servers, scopes and URL', async (t) => {
  const { app } = await build(t, {
    mcp: catalogue(),
    prefix: '/mcp-http',
    oauth: { ...oauth({ issuer: [ISSUER, 'https://second.example.test'] }), authorizationServers: ['https://as.example.test'], scopesSupported: ['s1'] }
  })
  const doc = await call(app, { url: '/mcp-http/.well-known/oauth-protected-resource' })
  t.same([doc.status, doc.body.authorization_servers, doc.body.scopes_supported], [200, ['https://as.example.test'], ['s1']])
  const none = await call(app, { url: '/mcp-http/tools' })
  t.same([none.status, none.body.code], [401, -32600])
  t.equal(none.headers['www-authenticate'], `Bearer realm="mcp", resource_metadata="${AUDIENCE}/mcp-http/.well-known/oauth-protected-resource"`)
  const second = await call(app, { url: '/mcp-http/tools', headers: bearer(await token({ iss: 'https://second.example.test' })) })
  t.equal(second.status, 200, 'any listed issuer')

  const { app: fixed } = await build(t, { mcp: catalogue(), oauth: oauth({ resourceMetadataUrl: 'https://docs.example.test/prm' }) })
  const res = await call(fixed, { url: '/tools' })
  t.same([res.status, res.body.code], [401, -32600])
  t.equal(res.headers['www-authenticate'], 'Bearer realm="mcp", resource_metadata="https://docs.example.test/prm"')
})

t.test('two principals never see each other\'s subscriptions', async (t) => {
  const store = new MemoryStore()
  const { app } = await build(t, { mcp: catalogue(), store, oauth: oauth() })
  const alice = await call(app, { method: 'POST', url: '/resources/subscribe', payload: { uri: 'x:r' }, headers: { ...bearer(await token()), 'mcp-protocol-version': '2025-11-25' } })
  t.same([alice.status, alice.headers['www-authenticate']], [202, undefined])
  const bob = await call(app, { method: 'POST', url: '/resources/unsubscribe', payload: { uri: 'x:r' }, headers: { ...bearer(await token({ sub: 'bob' })), 'mcp-protocol-version': '2025-11-25' } })
  t.equal(bob.status, 202)
  t.same(await store.connections.subscriptions(`${ISSUER}|alice`), ['x:r'])
  t.same(await store.connections.subscriptions(`${ISSUER}|bob`), [], 'bob neither sees nor removes alice\'s subscription')
  const anon = await call(app, { method: 'POST', url: '/resources/subscribe', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { uri: 'x:r' } })
  t.same([anon.status, anon.body.code, anon.headers['www-authenticate']], [401, -32600, CHALLENGE])
  t.same(await store.connections.subscriptions('anonymous'), [])
})

/** A tiny authorization server publishing JWKS at /jwks; counts fetches. */
async function jwksServer(t: Test, body: () => { status: number; json: unknown }) {
  let fetches = 0
  const server: Server = createServer((_req, res) => {
    fetches++
    const { status, json } = body()
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, fetches: () => fetches }
}

t.test('jwksUrl: keys fetched from the authorization server, refetched for an unknown kid', async (t) => {
  let keys = { keys: [JWKS.keys[0]!] }
  const as = await jwksServer(t, () => ({ status: 200, json: keys }))
  const { app } = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwksUrl: as.url } })
  const ok = await whoami(app, bearer(await token()))
  t.same([ok.status, ok.who.id, as.fetches()], [200, `${ISSUER}|alice`, 1])
  const unknown = await call(app, { url: '/tools', headers: bearer(await token({}, { kid: 'ec-1', alg: 'ES256', key: ec.privateKey })) })
  t.same([unknown.status, unknown.body.code, unknown.headers['www-authenticate']], [401, -32600, INVALID])
  t.equal(as.fetches(), 1, 'within the cooldown an unknown kid does not refetch')
  keys = JWKS
  const { app: fresh } = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwksUrl: new URL(as.url) } })
  const rotated = await call(fresh, { url: '/tools', headers: bearer(await token({}, { kid: 'ec-1', alg: 'ES256', key: ec.privateKey })) })
  t.same([rotated.status, rotated.headers['www-authenticate']], [200, undefined], 'a new key is found')
})

t.test('static keys first, then the remote set', async (t) => {
  const as = await jwksServer(t, () => ({ status: 200, json: { keys: [JWKS.keys[1]] } }))
  const two = { keys: [JWKS.keys[0]!, await publicJwk(other.publicKey, 'rsa-2', 'RS256')] }
  const { app } = await build(t, { mcp: catalogue(), oauth: oauth({ jwks: two, jwksUrl: as.url }) })
  const local = await call(app, { url: '/tools', headers: bearer(await token()) })
  t.same([local.status, as.fetches()], [200, 0], 'a pinned key needs no fetch')
  const remote = await call(app, { url: '/tools', headers: bearer(await token({}, { kid: 'ec-1', alg: 'ES256', key: ec.privateKey })) })
  t.same([remote.status, as.fetches()], [200, 1])
  const ambiguous = await call(app, { url: '/tools', headers: bearer(await token({}, { kid: undefined })) })
  t.same([ambiguous.status, ambiguous.body.code, ambiguous.headers['www-authenticate']], [401, -32600, INVALID], 'no kid among several keys')
})

t.test('an unreachable or broken key set is 503 with Retry-After, not the client\'s fault', async (t) => {
  const broken = await jwksServer(t, () => ({ status: 500, json: {} }))
  const { app } = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwksUrl: broken.url } })
  const res = await call(app, { url: '/tools', headers: bearer(await token()) })
  t.same([res.status, res.body.code], [503, -32603])
  t.equal(res.headers['retry-after'], '5')
  t.match(res.body.message, /keys are unavailable/)

  const closed = createServer().listen(0, '127.0.0.1')
  await once(closed, 'listening')
  const port = (closed.address() as AddressInfo).port
  await new Promise((resolve) => closed.close(resolve))
  const { app: gone } = await build(t, { mcp: catalogue(), oauth: { issuer: ISSUER, audience: AUDIENCE, jwksUrl: `http://localhost:${port}/jwks` } })
  const down = await call(gone, { url: '/tools', headers: bearer(await token()) })
  t.same([down.status, down.body.code, down.headers['retry-after']], [503, -32603, '5'])
})

t.test('HS256 only when listed, with its own secret: the public key never verifies an HMAC', async (t) => {
  const { app } = await build(t, { mcp: catalogue(), oauth: oauth({ algorithms: ['RS256', 'HS256'], secret: SECRET }) })
  const hs = await whoami(app, bearer(await token({}, { alg: 'HS256', kid: undefined, key: new TextEncoder().encode(SECRET) })))
  t.same([hs.status, hs.who.id], [200, `${ISSUER}|alice`])
  const confused = await call(app, {
    url: '/tools',
    headers: bearer(await token({}, { alg: 'HS256', kid: 'rsa-1', key: new TextEncoder().encode(await exportSPKI(rsa.publicKey)) }))
  })
  t.same([confused.status, confused.body.code, confused.headers['www-authenticate']], [401, -32600, INVALID])
  const rs = await call(app, { url: '/tools', headers: bearer(await token()) })
  t.equal(rs.status, 200, 'RS256 still verified with the key set')
  const es = await call(app, { url: '/tools', headers: bearer(await token({}, { alg: 'ES256', kid: 'ec-1', key: ec.privateKey })) })
  t.same([es.status, es.headers['www-authenticate']], [401, INVALID], 'an algorithm outside the list')

  const secretOnly = bearerAuth({ issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS512'], secret: new Uint8Array(64).fill(7) })
  const jwt = await token({}, { alg: 'HS512', kid: undefined, key: new Uint8Array(64).fill(7) })
  const principal = await secretOnly(fakeRequest({ authorization: `Bearer ${jwt}` }))
  t.same([principal.id, principal.anonymous], [`${ISSUER}|alice`, false])
})

t.test('Host and Origin validation against DNS rebinding', async (t) => {
  const { app } = await build(t, {
    mcp: catalogue(),
    allowedHosts: ['LOCALHOST:3000', '127.0.0.1'],
    allowedOrigins: ['http://localhost:3000']
  })
  const cases: [string, Record<string, string>, number, string?][] = [
    ['allowed host', { host: 'localhost:3000' }, 200],
    ['host without port matches any port', { host: '127.0.0.1:4567' }, 200],
    ['case-insensitive', { host: 'LocalHost:3000' }, 200],
    ['rebound name', { host: 'evil.example:3000' }, 403, 'Host not allowed'],
    ['allowed name, other port', { host: 'localhost:3001' }, 403, 'Host not allowed'],
    ['an allowed name inside a malformed Host', { host: 'localhost:3000:1' }, 403, 'Host not allowed'],
    ['userinfo before an allowed name', { host: 'evil@127.0.0.1' }, 403, 'Host not allowed'],
    ['allowed origin', { host: 'localhost:3000', origin: 'http://localhost:3000' }, 200],
    ['foreign origin', { host: 'localhost:3000', origin: 'http://evil.example' }, 403, 'Origin not allowed'],
    ['null origin', { host: 'localhost:3000', origin: 'null' }, 403, 'Origin not allowed']
  ]
  for (const [name, headers, status, message] of cases) {
    const res = await call(app, { url: '/tools', headers })
    t.equal(res.status, status, name)
    t.equal(res.headers['mcp-protocol-version'], '2026-07-28', `${name}: still an MCP response`)
    if (message !== undefined) t.same(res.body, { code: -32600, message }, `${name}: body`)
  }
  // A listed host is taken as it is once checked: a malformed one is a mistake of the configuration.
  for (const bad of ['localhost:3000:1', 'a b', 'user@localhost']) {
    await t.rejects(buildServer({ mcp: catalogue(), logger: false, allowedHosts: ['localhost', bad] }), { name: 'ConfigurationError', message: `allowedHosts (MCP_ALLOWED_HOSTS): ${JSON.stringify(bad)} is not a host[:port]` }, bad)
  }
  // HTTP/1.0 allows a request without Host; a rebinding page always sends one, but none is not allowed either.
  const { app: noHost } = await build(t, { mcp: catalogue(), allowedHosts: ['localhost'] })
  await noHost.listen({ host: '127.0.0.1', port: 0 })
  const socket = connect((noHost.server.address() as AddressInfo).port, '127.0.0.1')
  socket.end('GET /tools HTTP/1.0\r\n\r\n')
  let answer = ''
  for await (const chunk of socket) answer += chunk
  t.match(answer, /^HTTP\/1\.1 403 /, 'no Host at all')
  t.match(answer, /\{"code":-32600,"message":"Host not allowed"\}$/)

  const { app: guarded } = await build(t, { mcp: catalogue(), oauth: oauth(), allowedOrigins: ['https://app.example.test'] })
  const foreign = await call(guarded, { url: '/.well-known/oauth-protected-resource', headers: { origin: 'http://evil.example' } })
  t.same([foreign.status, foreign.body.code, foreign.headers['www-authenticate']], [403, -32600, undefined], 'checked before authentication, on every route')
  const allowed = await call(guarded, { url: '/.well-known/oauth-protected-resource', headers: { origin: 'https://app.example.test' } })
  t.equal(allowed.status, 200)
})

t.test('loopback defaults', async (t) => {
  t.ok(isLoopbackHost('127.0.0.1') && isLoopbackHost('127.1.2.3') && isLoopbackHost('localhost') && isLoopbackHost('::1') && isLoopbackHost('[::1]'))
  t.notOk(isLoopbackHost('0.0.0.0') || isLoopbackHost('10.0.0.1') || isLoopbackHost('localhost.evil.example'))
  t.same(loopbackOnly(3000), {
    allowedHosts: ['127.0.0.1:3000', 'localhost:3000', '[::1]:3000'],
    allowedOrigins: ['http://127.0.0.1:3000', 'http://localhost:3000', 'http://[::1]:3000']
  })
  t.same(loopbackOnly(80).allowedHosts, ['127.0.0.1:80', '127.0.0.1', 'localhost:80', 'localhost', '[::1]:80', '[::1]'])
  t.same(loopbackOnly(0), { allowedHosts: ['127.0.0.1', 'localhost', '[::1]'], allowedOrigins: [] })
})

t.test('configuration from the environment', async (t) => {
  const base = loadConfig({})
  t.equal(oauthFromConfig(base), undefined, 'OAuth is off by default')
  t.same(hostOriginFromConfig(base), loopbackOnly(3000), 'the default HOST is loopback: its names only')
  t.same(hostOriginFromConfig(loadConfig({ HOST: '0.0.0.0' })), {}, 'not bound to loopback: no default lists')
  t.same(hostOriginFromConfig(loadConfig({ MCP_ALLOWED_HOSTS: '*', MCP_ALLOWED_ORIGINS: ' * ' })), { loopbackByDefault: false }, '* turns the checks off, even buildServer\'s loopback default')
  t.same(hostOriginFromConfig(loadConfig({ HOST: '0.0.0.0', MCP_ALLOWED_HOSTS: 'a.example, b.example', MCP_ALLOWED_ORIGINS: 'https://a.example' })), {
    allowedHosts: ['a.example', 'b.example'],
    allowedOrigins: ['https://a.example']
  })
  const env = {
    MCP_OAUTH_AUDIENCE: AUDIENCE,
    MCP_OAUTH_ISSUER: `${ISSUER}, https://second.example.test`,
    MCP_OAUTH_JWKS_URL: `${ISSUER}/jwks`
  }
  t.same(oauthFromConfig(loadConfig(env)), {
    audience: AUDIENCE,
    issuer: [ISSUER, 'https://second.example.test'],
    jwksUrl: `${ISSUER}/jwks`,
    clockToleranceSec: 30
  })
  t.same(
    oauthFromConfig(
      loadConfig({
        ...env,
        MCP_OAUTH_AUTHORIZATION_SERVERS: 'https://as.example.test',
        MCP_OAUTH_ALGORITHMS: 'ES256,EdDSA',
        MCP_OAUTH_CLOCK_TOLERANCE_SEC: '5',
        MCP_OAUTH_RESOURCE_METADATA_URL: 'https://docs.example.test/prm'
      })
    ),
    {
      audience: AUDIENCE,
      issuer: [ISSUER, 'https://second.example.test'],
      jwksUrl: `${ISSUER}/jwks`,
      clockToleranceSec: 5,
      authorizationServers: ['https://as.example.test'],
      algorithms: ['ES256', 'EdDSA'],
      resourceMetadataUrl: 'https://docs.example.test/prm'
    }
  )
  t.throws(() => loadConfig({ MCP_OAUTH_AUDIENCE: AUDIENCE }), /MCP_OAUTH_ISSUER is required when MCP_OAUTH_AUDIENCE is set\n {2}MCP_OAUTH_JWKS_URL is required/)
  t.throws(() => loadConfig({ MCP_OAUTH_ISSUER: ISSUER, MCP_OAUTH_JWKS_URL: 'x' }), /MCP_OAUTH_AUDIENCE is required when MCP_OAUTH_ISSUER, MCP_OAUTH_JWKS_URL is set/)
  t.throws(() => loadConfig({ ...env, MCP_OAUTH_CLOCK_TOLERANCE_SEC: '9999' }), /MCP_OAUTH_CLOCK_TOLERANCE_SEC=9999/)
})

/** Just what bearerAuth reads of a Fastify request. */
function fakeRequest(headers: Record<string, string>) {
  const rawHeaders = Object.entries(headers).flat()
  return { raw: { headers: { ...headers }, rawHeaders }, log: { info() {}, error() {} } } as never
}

t.test('bearerAuth refuses unsafe or incomplete options at start-up', async (t) => {
  const ok: BearerAuthOptions = { issuer: ISSUER, audience: AUDIENCE, jwks: JWKS }
  const bad: [string, Partial<BearerAuthOptions>, RegExp][] = [
    ['no issuer', { issuer: [] }, /issuer is required/],
    ['empty issuer', { issuer: '' }, /issuer is required/],
    ['no audience', { audience: '' }, /audience .* is required/],
    ['no algorithms', { algorithms: [] }, /must not be empty/],
    ['none', { algorithms: ['none'] }, /"none" is not accepted/],
    ['unknown', { algorithms: ['RS1'] }, /"RS1" is not accepted/],
    ['HS without a secret', { algorithms: ['HS256'] }, /HS\* algorithms need a secret/],
    ['a secret without HS', { secret: SECRET }, /only used with HS\* algorithms/],
    ['a short secret', { algorithms: ['HS256'], secret: 'short', jwks: undefined }, /at least 32 bytes/],
    ['no key set', { jwks: undefined }, /jwksUrl or jwks is required/],
    ['a key set without asymmetric algorithms', { algorithms: ['HS256'], secret: SECRET }, /only used with asymmetric/],
    ['http JWKS', { jwks: undefined, jwksUrl: 'http://auth.example.test/jwks' }, /must use https/],
    ['a JWKS URL that is none', { jwks: undefined, jwksUrl: 'not a url' }, /jwksUrl is not a URL/],
    ['a malformed key set', { jwks: { keys: 'nope' } as never }, /jwks is not a JSON Web Key Set/],
    ['negative tolerance', { clockToleranceSec: -1 }, /clockToleranceSec/],
    ['a metadata URL that is none', { resourceMetadataUrl: 'nope' }, /resourceMetadataUrl is not a URL/]
  ]
  for (const [name, change, message] of bad) {
    t.throws(() => bearerAuth({ ...ok, ...change }), message, name)
  }
  t.ok(bearerAuth({ ...ok, jwks: undefined, jwksUrl: 'https://auth.example.test/jwks' }), 'https JWKS')
  t.throws(() => oauthSetup({ ...ok, audience: 'mcp-server' }, ''), /absolute URL/)
  t.throws(() => oauthSetup({ ...ok, audience: 'urn:x:y' }, ''), /http\(s\) URL without fragment/)
  t.throws(() => oauthSetup({ ...ok, audience: `${AUDIENCE}#f` }, ''), /http\(s\) URL without fragment/)
  t.throws(() => oauthSetup({ ...ok, authorizationServers: [] }, ''), /authorizationServers must not be empty/)
  // Issuer identifiers (RFC 8414), which clients compare exactly with the metadata and the response's iss (SEP-2468).
  for (const server of ['auth.example.test', 'http://auth.example.test', 'https://auth.example.test?tenant=1', 'https://auth.example.test#x', 'https://auth.example.test/?', 'ftp://auth.example.test']) {
    t.throws(() => oauthSetup({ ...ok, authorizationServers: [server] }, ''), /authorizationServers ".*" is not an authorization server's issuer identifier/, server)
  }
  t.throws(() => oauthSetup({ ...ok, issuer: 'my-issuer' }, ''), /issuer "my-issuer" is not an authorization server's issuer identifier/, 'the issuers stand in for them')
  t.ok(oauthSetup({ ...ok, issuer: 'my-issuer', authorizationServers: ['https://as.example.test/tenant1'] }, ''), 'unless the servers are named')
  t.ok(oauthSetup({ ...ok, authorizationServers: ['http://127.0.0.1:9000', 'http://localhost:9000/realms/x'] }, ''), 'http on a loopback host')
  // MCP 2026-07-28: no offline_access in scopes_supported or a challenge.
  t.throws(() => oauthSetup({ ...ok, scopesSupported: ['read', 'offline_access'] }, ''), /scopesSupported must not list offline_access/)
  t.throws(() => catalogue().tool({ name: 'bad', scopes: ['offline_access'] }, () => ''), /offline_access is not a resource's scope/)
  await t.rejects(
    build(t, { mcp: catalogue(), oauth: ok, authenticate: async () => ({ id: 'x', scopes: [], anonymous: false }) }),
    ConfigurationError
  )
  t.throws(() => catalogue().tool({ name: 'bad', scopes: ['has space'] }, () => ''), /"has space" is not an OAuth scope token/)
  t.throws(() => catalogue().tool({ name: 'bad', scopes: ['quo"te'] }, () => ''), /not an OAuth scope token/)
})

t.test('withResourceMetadata leaves other errors alone', async (t) => {
  const plain = new McpError(-32600, 'x', 400)
  t.equal(withResourceMetadata(plain, METADATA), plain)
  const basic = new McpError(-32600, 'x', 401, undefined, { 'www-authenticate': 'Basic realm="x"' })
  t.equal(withResourceMetadata(basic, METADATA), basic)
  const scoped = withResourceMetadata(new McpError(-32600, 'x', 403, { a: 1 }, { 'www-authenticate': 'Bearer error="insufficient_scope"', 'x-other': '1' }), METADATA)
  t.same([scoped.status, scoped.data, scoped.headers], [403, { a: 1 }, { 'www-authenticate': `Bearer error="insufficient_scope", resource_metadata="${METADATA}"`, 'x-other': '1' }])
})
