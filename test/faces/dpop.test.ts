import t, { type Test } from 'tap'
import { createHash, createHmac, randomUUID } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, type JWTPayload } from 'jose'
import Fastify from 'fastify'
import type { OAuthOptions } from '../../src/auth/oauth.js'
import { bearerAuth } from '../../src/auth/bearer.js'
import { comparableUrl } from '../../src/auth/dpop.js'
import { loadConfig, oauthFromConfig } from '../../src/config.js'
import { McpServer } from '../../src/core/mcp-server.js'
import { buildServer } from '../../src/server.js'
import { RedisStore } from '../../src/store/redis.js'
import type { Store } from '../../src/store/types.js'
import { startRedis } from '../helpers/redis-server.js'
import { envelope } from '../helpers/rpc.js'

/*
 * DPoP (RFC 9449, SEP-1932) on the resource server, over a real socket, on both faces: the Pure
 * HTTP route and JSON-RPC `/mcp` share the authentication hook. The server's public origin (the
 * audience) is not the socket's: as behind a proxy, a proof names the public URL.
 */

const ISSUER = 'https://auth.example.test'
const PUBLIC = 'https://mcp.example.test'
const METADATA = `${PUBLIC}/.well-known/oauth-protected-resource`
const ALGS = 'algs="ES256 EdDSA RS256 PS256"'
const NONCE_SECRET = 'a nonce secret shared by every instance, 32+ bytes'

const as = await generateKeyPair('ES256', { extractable: true })
const JWKS = { keys: [{ ...(await exportJWK(as.publicKey)), kid: 'as-1', alg: 'ES256' }] }

interface ClientKey {
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']
  jwk: JWK
  jkt: string
  alg: string
}
async function clientKey(alg = 'ES256'): Promise<ClientKey> {
  const pair = await generateKeyPair(alg, { extractable: true })
  const jwk = await exportJWK(pair.publicKey)
  return { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk), alg }
}
const alice = await clientKey()
const mallory = await clientKey()

const now = () => Math.floor(Date.now() / 1000)
const hashOf = (token: string) => createHash('sha256').update(token).digest('base64url')
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')

/** An access token from ISSUER for PUBLIC, bound to `jkt` unless it is null. */
async function token(jkt: string | null = alice.jkt, claims: JWTPayload = {}): Promise<string> {
  return new SignJWT({ sub: 'alice', scope: 'mcp:read', ...(jkt === null ? {} : { cnf: { jkt } }), ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'as-1', typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(PUBLIC)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(as.privateKey)
}

interface ProofOptions {
  key?: ClientKey
  htm?: string
  htu?: string
  iat?: number
  jti?: string
  ath?: string
  nonce?: string
  header?: Record<string, unknown>
  claims?: Record<string, unknown>
}

/** A fresh proof for `method url` with `token`, by alice's key unless told; every part can be changed. */
async function proof(method: string, url: string, tok: string, o: ProofOptions = {}): Promise<string> {
  const key = o.key ?? alice
  return new SignJWT({
    jti: o.jti ?? randomUUID(),
    htm: o.htm ?? method,
    htu: o.htu ?? url,
    iat: o.iat ?? now(),
    ath: o.ath ?? hashOf(tok),
    ...(o.nonce === undefined ? {} : { nonce: o.nonce }),
    ...o.claims
  })
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk, ...o.header })
    .sign(key.privateKey)
}

function catalogue(): McpServer {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'whoami' }, (_args, ctx) => {
    const reply = (ctx as unknown as { reply?: { request: { raw: { rawHeaders: string[] } } } }).reply
    return JSON.stringify({ id: ctx.principal.id, cnf: ctx.principal.claims?.cnf, proofSeen: (reply?.request.raw.rawHeaders ?? []).some((h) => h.toLowerCase() === 'dpop') })
  })
  mcp.tool({ name: 'admin', scopes: ['mcp:admin'] }, () => 'ok')
  return mcp
}

interface Served {
  base: string
  port: number
}

async function serve(t: Test, dpop: OAuthOptions['dpop'], more: { store?: Store; apiKeys?: { principal: string; key: string }[] } = {}): Promise<Served> {
  const app = await buildServer({ mcp: catalogue(), logger: false, oauth: { issuer: ISSUER, audience: PUBLIC, jwks: JWKS, dpop }, ...more })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return { base: `http://127.0.0.1:${port}`, port }
}

type Face = 'rest' | 'jsonrpc'
const FACES: Face[] = ['rest', 'jsonrpc']
const pathOf = (face: Face, tool = 'whoami') => (face === 'rest' ? `/tools/${tool}/calls` : '/mcp')

interface Answer {
  status: number
  challenge: string | null
  nonce: string | null
  body: any
  who: any
}

/** Call whoami on one face with these credential headers (DPoP `proofs`: one, several or none). */
async function whoami(s: Served, face: Face, authorization: string | undefined, proofs: string[] = [], tool = 'whoami'): Promise<Answer> {
  const path = pathOf(face, tool)
  const headers: [string, string][] = [
    ['content-type', 'application/json'],
    ['mcp-protocol-version', '2026-07-28']
  ]
  if (authorization !== undefined) headers.push(['authorization', authorization])
  for (const p of proofs) headers.push(['dpop', p])
  let body: unknown = {}
  if (face === 'jsonrpc') {
    headers.push(['mcp-method', 'tools/call'], ['mcp-name', tool])
    body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: {}, _meta: envelope() } }
  }
  // node:http with raw headers, not fetch: fetch joins repeated headers into one line, and a test
  // needs two DPoP lines. Raw headers are sent as given, Host and Content-Length included.
  const text = JSON.stringify(body)
  headers.push(['host', `127.0.0.1:${s.port}`], ['content-length', String(Buffer.byteLength(text))])
  const res = await new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: s.port, path, method: 'POST', headers: headers.flat() as unknown as Record<string, string> }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }))
    })
    req.on('error', reject)
    req.end(text)
  })
  const parsed = res.text === '' ? undefined : JSON.parse(res.text)
  const result = face === 'jsonrpc' ? parsed?.result : parsed
  const error = face === 'jsonrpc' ? parsed?.error : parsed
  return {
    status: res.status,
    challenge: (res.headers['www-authenticate'] as string | undefined) ?? null,
    nonce: (res.headers['dpop-nonce'] as string | undefined) ?? null,
    body: error ?? parsed,
    who: res.status === 200 && tool === 'whoami' ? JSON.parse(result.content[0].text) : undefined
  }
}

/** A proof and its Authorization header for whoami on `face` of the public URL. */
async function dpopCall(s: Served, face: Face, tok: string, o: ProofOptions = {}): Promise<Answer> {
  return whoami(s, face, `DPoP ${tok}`, [await proof('POST', `${PUBLIC}${pathOf(face)}`, tok, o)])
}

const refused = (t: Test, a: Answer, error: string, message: RegExp, name: string) => {
  t.equal(a.status, 401, `${name}: 401`)
  t.match(a.body, { code: -32600, message }, `${name}: the error shape`)
  t.match(a.challenge, new RegExp(`^Bearer realm="mcp", resource_metadata="${METADATA}", DPoP error="${error}", ${ALGS}, resource_metadata="${METADATA}"$`), `${name}: ${error}`)
}

t.test('a bound token with a valid proof is accepted on both faces; the proof stays out of reach', async (t) => {
  const s = await serve(t, {})
  for (const face of FACES) {
    const tok = await token()
    const a = await dpopCall(s, face, tok)
    t.equal(a.status, 200, face)
    t.same(a.who, { id: `${ISSUER}|alice`, cnf: { jkt: alice.jkt }, proofSeen: false }, `${face}: the principal, its binding; the DPoP header is gone`)
    t.equal(a.challenge, null)
    const lower = await whoami(s, face, `dpop ${tok}`, [await proof('POST', `${PUBLIC.toUpperCase().replace('HTTPS', 'https')}:443${pathOf(face)}`, tok)])
    t.equal(lower.status, 200, `${face}: the scheme is case-insensitive; htu is compared normalised (host case, default port)`)
    const ed = await clientKey('EdDSA')
    const edTok = await token(ed.jkt)
    t.equal((await dpopCall(s, face, edTok, { key: ed })).status, 200, `${face}: an EdDSA proof`)
    const unbound = await whoami(s, face, `Bearer ${await token(null)}`)
    t.equal(unbound.status, 200, `${face}: an unbound token as Bearer, while DPoP is not required`)
    t.equal((await dpopCall(s, face, tok, { iat: now() + 240 })).status, 200, `${face}: an iat ahead, within the window (a client clock running fast)`)
    t.equal((await dpopCall(s, face, tok, { iat: now() - 240 })).status, 200, `${face}: an iat behind, within the window`)
  }
})

t.test('a missing tool scope: 403 insufficient_scope in the scheme the token came with', async (t) => {
  const s = await serve(t, {})
  for (const face of FACES) {
    const tok = await token()
    const dpop = await whoami(s, face, `DPoP ${tok}`, [await proof('POST', `${PUBLIC}${pathOf(face, 'admin')}`, tok)], 'admin')
    t.same([dpop.status, dpop.challenge], [403, `DPoP error="insufficient_scope", scope="mcp:admin", ${ALGS}, resource_metadata="${METADATA}"`], `${face}: DPoP`)
    t.match(dpop.body, { message: 'Insufficient scope: tool admin requires mcp:admin' })
    const bearer = await whoami(s, face, `Bearer ${await token(null)}`, [], 'admin')
    t.same([bearer.status, bearer.challenge], [403, `Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="${METADATA}"`], `${face}: Bearer`)
    const granted = await token(alice.jkt, { scope: 'mcp:admin' })
    t.equal((await whoami(s, face, `DPoP ${granted}`, [await proof('POST', `${PUBLIC}${pathOf(face, 'admin')}`, granted)], 'admin')).status, 200, `${face}: with the scope`)
  }
})

t.test('refused proofs, on both faces: each with its error in the DPoP challenge', async (t) => {
  const s = await serve(t, {})
  for (const face of FACES) {
    const url = `${PUBLIC}${pathOf(face)}`
    const tok = await token()
    refused(t, await whoami(s, face, `DPoP ${tok}`), 'invalid_dpop_proof', /A DPoP proof is required/, `${face}: a bound token without a proof`)
    const two = [await proof('POST', url, tok), await proof('POST', url, tok)]
    refused(t, await whoami(s, face, `DPoP ${tok}`, two), 'invalid_dpop_proof', /one DPoP header/, `${face}: two proofs`)
    refused(t, await dpopCall(s, face, tok, { htm: 'GET' }), 'invalid_dpop_proof', /htm must be POST/, `${face}: a proof for another method`)
    refused(t, await dpopCall(s, face, tok, { htu: `${PUBLIC}/tools/other/calls` }), 'invalid_dpop_proof', /htu/, `${face}: a proof for another URL`)
    refused(t, await dpopCall(s, face, tok, { htu: `${s.base}${pathOf(face)}` }), 'invalid_dpop_proof', /htu/, `${face}: a proof for the socket's URL, not the public one`)
    refused(t, await dpopCall(s, face, tok, { htu: 'not a url' }), 'invalid_dpop_proof', /htu/, `${face}: htu not a URL`)
    refused(t, await dpopCall(s, face, tok, { iat: now() - 400 }), 'invalid_dpop_proof', /iat must be within 300 s/, `${face}: a stale iat`)
    refused(t, await dpopCall(s, face, tok, { iat: now() + 400 }), 'invalid_dpop_proof', /iat must be within 300 s/, `${face}: a future iat`)
    refused(t, await dpopCall(s, face, tok, { claims: { iat: 'yesterday' } }), 'invalid_dpop_proof', /signature|iat/, `${face}: a non-numeric iat`)
    refused(t, await dpopCall(s, face, tok, { ath: hashOf('another token') }), 'invalid_dpop_proof', /ath/, `${face}: a wrong ath`)
    refused(t, await dpopCall(s, face, tok, { key: mallory }), 'invalid_token', /bound to another key/, `${face}: a proof by another key than cnf.jkt`)
    refused(t, await dpopCall(s, face, tok, { jti: '' }), 'invalid_dpop_proof', /jti is required/, `${face}: no jti`)
    refused(t, await dpopCall(s, face, tok, { jti: 'j'.repeat(257) }), 'invalid_dpop_proof', /jti must be at most 256 characters/, `${face}: a jti too long to keep`)
    t.equal((await dpopCall(s, face, tok, { jti: face.padEnd(256, 'j') })).status, 200, `${face}: 256 characters are fine`)
    refused(t, await dpopCall(s, face, tok, { header: { typ: 'JWT' } }), 'invalid_dpop_proof', /typ must be dpop\+jwt/, `${face}: typ`)
    refused(t, await dpopCall(s, face, tok, { header: { jwk: undefined } }), 'invalid_dpop_proof', /jwk header is required/, `${face}: no jwk`)
    refused(t, await dpopCall(s, face, tok, { header: { jwk: mallory.jwk } }), 'invalid_dpop_proof', /signature does not verify/, `${face}: jwk of another key than the signature's`)
    const privateJwk = await exportJWK(alice.privateKey)
    refused(t, await dpopCall(s, face, tok, { header: { jwk: privateJwk } }), 'invalid_dpop_proof', /must be a public key/, `${face}: a private key in the header`)
    const none = `${b64({ alg: 'none', typ: 'dpop+jwt', jwk: alice.jwk })}.${b64({ jti: randomUUID(), htm: 'POST', htu: url, iat: now(), ath: hashOf(tok) })}.`
    refused(t, await whoami(s, face, `DPoP ${tok}`, [none]), 'invalid_dpop_proof', /alg must be one of ES256, EdDSA, RS256, PS256/, `${face}: alg none`)
    const secret = new TextEncoder().encode('a symmetric key of at least thirty-two bytes')
    const hs = await new SignJWT({ jti: randomUUID(), htm: 'POST', htu: url, iat: now(), ath: hashOf(tok) })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: Buffer.from(secret).toString('base64url') } as never })
      .sign(secret)
    refused(t, await whoami(s, face, `DPoP ${tok}`, [hs]), 'invalid_dpop_proof', /alg must be one of/, `${face}: HS256`)
    refused(t, await whoami(s, face, `DPoP ${tok}`, ['not.a-proof']), 'invalid_dpop_proof', /not a JWS/, `${face}: not a JWS`)
    const unbound = await token(null)
    refused(t, await dpopCall(s, face, unbound), 'invalid_token', /not DPoP-bound/, `${face}: an unbound token with the DPoP scheme`)
    const expired = await new SignJWT({ sub: 'alice', cnf: { jkt: alice.jkt } }).setProtectedHeader({ alg: 'ES256', kid: 'as-1' }).setIssuer(ISSUER).setAudience(PUBLIC).setExpirationTime(now() - 120).sign(as.privateKey)
    refused(t, await dpopCall(s, face, expired), 'invalid_token', /expired/, `${face}: an expired token with a valid proof`)
  }
})

t.test('a bound token as Bearer, no credentials, malformed headers: the Bearer challenge beside the DPoP one', async (t) => {
  const s = await serve(t, {})
  for (const face of FACES) {
    const bound = await whoami(s, face, `Bearer ${await token()}`)
    t.equal(bound.status, 401, `${face}: a bound token as Bearer`)
    t.match(bound.body, { message: /DPoP-bound: send it as "Authorization: DPoP <token>"/ })
    t.equal(bound.challenge, `Bearer realm="mcp", error="invalid_token", resource_metadata="${METADATA}", DPoP ${ALGS}, resource_metadata="${METADATA}"`)
    const none = await whoami(s, face, undefined)
    t.equal(none.challenge, `Bearer realm="mcp", resource_metadata="${METADATA}", DPoP ${ALGS}, resource_metadata="${METADATA}"`, `${face}: no credentials`)
    t.match(none.body, { message: /"Authorization: DPoP <token>" with a DPoP proof header, or "Authorization: Bearer <token>"/ })
    refused(t, await whoami(s, face, 'DPoP'), 'invalid_request', /expected "DPoP <token>"/, `${face}: DPoP without a token`)
    const bearer = await whoami(s, face, 'Bearer')
    t.match([bearer.status, bearer.challenge], [401, /^Bearer realm="mcp", error="invalid_request"/], `${face}: Bearer without a token`)
    const basic = await whoami(s, face, 'Basic YTpi')
    t.match([basic.status, basic.body.message, basic.challenge], [401, /only the DPoP and Bearer schemes/, /^Bearer realm="mcp", resource_metadata/], `${face}: another scheme`)
    const bad = await whoami(s, face, 'Bearer not-a-jwt')
    t.match([bad.status, bad.challenge], [401, /^Bearer realm="mcp", error="invalid_token"/], `${face}: an invalid Bearer token`)
  }
})

t.test('a replayed proof is refused, on the same instance and on another sharing one Redis', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = `dpop${randomUUID().slice(0, 8)}:`
  const stores = [new RedisStore({ url: redis.url, prefix }), new RedisStore({ url: redis.url, prefix })]
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  const one = await serve(t, {}, { store: stores[0]! })
  const two = await serve(t, {}, { store: stores[1]! })
  for (const face of FACES) {
    const tok = await token()
    const p = await proof('POST', `${PUBLIC}${pathOf(face)}`, tok)
    t.equal((await whoami(one, face, `DPoP ${tok}`, [p])).status, 200, `${face}: first use`)
    refused(t, await whoami(one, face, `DPoP ${tok}`, [p]), 'invalid_dpop_proof', /used before/, `${face}: again on the same instance`)
    refused(t, await whoami(two, face, `DPoP ${tok}`, [p]), 'invalid_dpop_proof', /used before/, `${face}: again on another instance`)
    const q = await proof('POST', `${PUBLIC}${pathOf(face)}`, tok)
    t.equal((await whoami(two, face, `DPoP ${tok}`, [q])).status, 200, `${face}: a fresh proof is fine on either`)
  }
})

/** The nonce format (window.HMAC), made here as another instance would: to show one from the previous window. */
function nonceOf(window: number): string {
  return `${window}.${createHmac('sha256', NONCE_SECRET).update(`dpop-nonce\n${PUBLIC}\n${window}`).digest().subarray(0, 18).toString('base64url')}`
}

t.test('server nonces: use_dpop_nonce, then success with it; any instance takes another\'s; a rolled nonce is renewed', async (t) => {
  // A day a window: the test never sees one end (it takes its window from the nonce it was given).
  const nonce = { secret: NONCE_SECRET, windowSec: 86_400 }
  const one = await serve(t, { nonce })
  const two = await serve(t, { nonce })
  for (const face of FACES) {
    const tok = await token()
    const first = await dpopCall(one, face, tok)
    t.equal(first.status, 401, `${face}: a proof without a nonce`)
    t.equal(first.challenge, `Bearer realm="mcp", resource_metadata="${METADATA}", DPoP error="use_dpop_nonce", ${ALGS}, resource_metadata="${METADATA}"`)
    t.match(first.body, { code: -32600, message: /requires a nonce/ })
    t.match(first.nonce, /^\d+\.[A-Za-z0-9_-]{24}$/, `${face}: DPoP-Nonce`)
    const again = await dpopCall(one, face, tok, { nonce: first.nonce! })
    t.same([again.status, again.nonce], [200, null], `${face}: with the nonce, accepted; the nonce is current, none sent`)
    t.equal((await dpopCall(two, face, tok, { nonce: first.nonce! })).status, 200, `${face}: another instance accepts it`)
    const window = Number(first.nonce!.split('.')[0])
    t.equal(nonceOf(window), first.nonce, 'the nonce is the window and its HMAC')
    const rolled = await dpopCall(two, face, tok, { nonce: nonceOf(window - 1) })
    t.same([rolled.status, rolled.nonce], [200, first.nonce], `${face}: the previous window's nonce is accepted, and the current one sent`)
    for (const [name, bad] of [
      ['two windows old', nonceOf(window - 2)],
      ['from the future', nonceOf(window + 1)],
      ['forged', `${window}.${'A'.repeat(24)}`],
      ['garbage', 'x'.repeat(100)]
    ] as const) {
      const a = await dpopCall(one, face, tok, { nonce: bad })
      t.same([a.status, a.nonce], [401, first.nonce], `${face}: a nonce ${name} is refused with the current one`)
    }
  }
})

t.test('required: only bound tokens (API keys stay Bearer); the metadata says so', async (t) => {
  const key = 'k'.repeat(40)
  const s = await serve(t, { required: true, algorithms: ['ES256'], iatWindowSec: 60 }, { apiKeys: [{ principal: 'robot', key }] })
  const meta = await (await fetch(`${s.base}/.well-known/oauth-protected-resource`)).json()
  t.match(meta, { resource: PUBLIC, bearer_methods_supported: ['header'], dpop_signing_alg_values_supported: ['ES256'], dpop_bound_access_tokens_required: true })
  for (const face of FACES) {
    const unbound = await whoami(s, face, `Bearer ${await token(null)}`)
    t.equal(unbound.status, 401, `${face}: an unbound token`)
    t.equal(unbound.challenge, `Bearer realm="mcp", error="invalid_token", resource_metadata="${METADATA}", DPoP algs="ES256", resource_metadata="${METADATA}"`)
    t.match(unbound.body, { message: /requires DPoP-bound access tokens/ })
    t.same((await whoami(s, face, `Bearer ${key}`)).who.id, 'apikey:robot', `${face}: an API key as Bearer`)
    const stale = await dpopCall(s, face, await token(), { iat: now() - 120 })
    t.match(stale.body, { message: /within 60 s/ }, `${face}: the configured window`)
    t.equal((await dpopCall(s, face, await token())).status, 200, `${face}: a bound token with its proof`)
  }
  const alone = await serve(t, { required: true })
  const a = await whoami(alone, 'rest', `Bearer ${await token(null)}`)
  t.equal(a.challenge, `DPoP error="invalid_token", ${ALGS}, resource_metadata="${METADATA}"`, 'without API keys, only the DPoP challenge')
  t.match((await whoami(alone, 'rest', undefined)).body, { message: /send "Authorization: DPoP <token>" with a DPoP proof header$/ })
  t.match((await whoami(alone, 'rest', 'Basic YTpi')).body, { message: /only the DPoP scheme is supported/ })
  const allowed = await serve(t, {})
  const meta2 = (await (await fetch(`${allowed.base}/.well-known/oauth-protected-resource`)).json()) as Record<string, unknown>
  t.same([meta2.dpop_signing_alg_values_supported, meta2.dpop_bound_access_tokens_required], [['ES256', 'EdDSA', 'RS256', 'PS256'], undefined], 'allowed: the algorithms, not required')
})

t.test('without DPoP configured, a bound token is refused as Bearer all the same', async (t) => {
  const s = await serve(t, undefined)
  const a = await whoami(s, 'rest', `Bearer ${await token()}`)
  t.same([a.status, a.body.message, a.challenge], [401, 'This access token is DPoP-bound, and this server does not accept DPoP', `Bearer realm="mcp", error="invalid_token", resource_metadata="${METADATA}"`])
  const meta = (await (await fetch(`${s.base}/.well-known/oauth-protected-resource`)).json()) as Record<string, unknown>
  t.notOk('dpop_signing_alg_values_supported' in meta)
})

t.test('bearerAuth alone keeps proof ids in its own memory; a fresh nonce goes on the reply', async (t) => {
  const app = Fastify()
  const authenticate = bearerAuth({ issuer: ISSUER, audience: PUBLIC, jwks: JWKS, dpop: {} })
  app.get('/x', async (request, reply) => (await authenticate(request, reply)).id)
  t.teardown(() => app.close())
  const tok = await token()
  const p = await proof('GET', `${PUBLIC}/x`, tok)
  const first = await app.inject({ url: '/x?q=1', headers: { authorization: `DPoP ${tok}`, dpop: p } })
  t.same([first.statusCode, first.payload], [200, `${ISSUER}|alice`], 'the query is not part of htu')
  const second = await app.inject({ url: '/x', headers: { authorization: `DPoP ${tok}`, dpop: p } })
  t.equal(second.statusCode, 401, 'a replay is refused')
})

t.test('htu comparison: RFC 3986 normalisation, and what is not an http(s) URL', async (t) => {
  t.equal(comparableUrl('HTTPS://MCP.Example.TEST:443/a/%7euser/%2f/./b/../c?q#f'), 'https://mcp.example.test/a/~user/%2F/c')
  t.equal(comparableUrl('http://h:80'), 'http://h/')
  t.equal(comparableUrl('ftp://h/x'), undefined)
  t.equal(comparableUrl('https://user:pw@h/x'), undefined)
  t.equal(comparableUrl('/relative'), undefined)
})

t.test('options are checked at start', async (t) => {
  const make = (dpop: NonNullable<OAuthOptions['dpop']>) => () => bearerAuth({ issuer: ISSUER, audience: PUBLIC, jwks: JWKS, dpop })
  t.throws(make({ algorithms: [] }), { name: 'ConfigurationError', message: 'dpop: algorithms must not be empty' })
  t.throws(make({ algorithms: ['ES256', 'HS256'] }), { name: 'ConfigurationError', message: /dpop: algorithm "HS256" is not accepted for proofs/ })
  t.throws(make({ algorithms: ['none'] }), { name: 'ConfigurationError', message: /"none" is not accepted/ })
  t.throws(make({ iatWindowSec: 0 }), { name: 'ConfigurationError', message: 'dpop: iatWindowSec must be a positive number' })
  t.throws(make({ iatWindowSec: Number.NaN }), { name: 'ConfigurationError' })
  t.throws(make({ nonce: { secret: 'short' } }), { name: 'ConfigurationError', message: 'dpop: the nonce secret must be at least 32 bytes' })
  t.throws(make({ nonce: { secret: NONCE_SECRET, windowSec: 1.5 } }), { name: 'ConfigurationError', message: 'dpop: nonce windowSec must be a positive integer' })
  t.doesNotThrow(make({ nonce: { secret: new Uint8Array(32) } }), 'a secret of bytes, the default window')
})

t.test('odd requests: two Authorization headers, a proof without iat, a nonce that is no string', async (t) => {
  const s = await serve(t, { nonce: { secret: new TextEncoder().encode(NONCE_SECRET) } })
  const tok = await token()
  const url = `${PUBLIC}/tools/whoami/calls`
  const twice = await new Promise<{ status: number; challenge: string }>((resolve, reject) => {
    const body = '{}'
    const raw = ['host', `127.0.0.1:${s.port}`, 'content-type', 'application/json', 'content-length', '2', 'authorization', `DPoP ${tok}`, 'authorization', `DPoP ${tok}`]
    const req = httpRequest({ host: '127.0.0.1', port: s.port, path: '/tools/whoami/calls', method: 'POST', headers: raw as unknown as Record<string, string> }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode!, challenge: res.headers['www-authenticate']! }))
    })
    req.on('error', reject)
    req.end(body)
  })
  t.same(twice, { status: 401, challenge: `Bearer realm="mcp", resource_metadata="${METADATA}", DPoP error="invalid_request", ${ALGS}, resource_metadata="${METADATA}"` })
  const first = await dpopCall(s, 'rest', tok)
  const noIat = await whoami(s, 'rest', `DPoP ${tok}`, [await proof('POST', url, tok, { nonce: first.nonce!, claims: { iat: undefined } })])
  t.match([noIat.status, noIat.body.message], [401, /iat is required/])
  const numeric = await whoami(s, 'rest', `DPoP ${tok}`, [await proof('POST', url, tok, { claims: { nonce: 7 } })])
  t.match([numeric.status, numeric.nonce], [401, /^\d+\.[A-Za-z0-9_-]{24}$/], 'a numeric nonce is no nonce')
  t.equal((await dpopCall(s, 'rest', tok, { nonce: first.nonce! })).status, 200, 'a secret given as bytes, the default window')
})

t.test('MCP_OAUTH_DPOP_* give the dpop option; without the audience they stop the start', async (t) => {
  const base = { MCP_OAUTH_AUDIENCE: PUBLIC, MCP_OAUTH_ISSUER: ISSUER, MCP_OAUTH_JWKS_URL: `${ISSUER}/jwks` }
  t.equal(oauthFromConfig(loadConfig(base))!.dpop, undefined, 'off by default')
  t.same(oauthFromConfig(loadConfig({ ...base, MCP_OAUTH_DPOP: 'allowed' }))!.dpop, { required: false, iatWindowSec: 300 })
  t.same(
    oauthFromConfig(
      loadConfig({
        ...base,
        MCP_OAUTH_DPOP: 'required',
        MCP_OAUTH_DPOP_ALGORITHMS: 'ES256, EdDSA',
        MCP_OAUTH_DPOP_IAT_WINDOW_SEC: '120',
        MCP_OAUTH_DPOP_NONCE_SECRET: NONCE_SECRET,
        MCP_OAUTH_DPOP_NONCE_WINDOW_SEC: '60'
      })
    )!.dpop,
    { required: true, iatWindowSec: 120, algorithms: ['ES256', 'EdDSA'], nonce: { secret: NONCE_SECRET, windowSec: 60 } }
  )
  t.throws(() => loadConfig({ MCP_OAUTH_DPOP: 'required' }), { message: /MCP_OAUTH_AUDIENCE is required when MCP_OAUTH_DPOP is set/ })
  t.throws(() => loadConfig({ MCP_OAUTH_DPOP_NONCE_SECRET: NONCE_SECRET }), { message: /MCP_OAUTH_AUDIENCE is required when MCP_OAUTH_DPOP_NONCE_SECRET is set/ })
  t.throws(() => loadConfig({ ...base, MCP_OAUTH_DPOP: 'maybe' }), { message: /MCP_OAUTH_DPOP/ })
  t.throws(() => loadConfig({ ...base, MCP_OAUTH_DPOP_NONCE_SECRET: 'short' }), { message: /MCP_OAUTH_DPOP_NONCE_SECRET/ })
})

t.test('the OpenAPI document names the DPoP scheme beside Bearer, or alone when DPoP is required', async (t) => {
  // The document is behind authorization like any route: fetched with a bound token and its proof.
  const security = async (s: Served, bearer = false) => {
    const tok = await token(bearer ? null : alice.jkt)
    const headers: Record<string, string> = bearer ? { authorization: `Bearer ${tok}` } : { authorization: `DPoP ${tok}`, dpop: await proof('GET', `${PUBLIC}/openapi.json`, tok) }
    const doc = (await (await fetch(`${s.base}/openapi.json`, { headers })).json()) as { security: unknown; components: { securitySchemes: Record<string, { scheme: string }> } }
    return { security: doc.security, schemes: Object.fromEntries(Object.entries(doc.components.securitySchemes).map(([k, v]) => [k, v.scheme])) }
  }
  t.same(await security(await serve(t, {})), { security: [{ bearer: [] }, { dpop: [] }], schemes: { bearer: 'bearer', dpop: 'DPoP' } }, 'allowed: either')
  t.same(await security(await serve(t, { required: true })), { security: [{ dpop: [] }], schemes: { dpop: 'DPoP' } }, 'required: DPoP only')
  const withKeys = await security(await serve(t, { required: true }, { apiKeys: [{ principal: 'robot', key: 'k'.repeat(40) }] }))
  t.same(withKeys, { security: [{ bearer: [] }, { dpop: [] }], schemes: { bearer: 'bearer', dpop: 'DPoP' } }, 'required, with API keys: keys stay Bearer')
  t.same(await security(await serve(t, undefined), true), { security: [{ bearer: [] }], schemes: { bearer: 'bearer' } }, 'no DPoP: Bearer alone')
})
