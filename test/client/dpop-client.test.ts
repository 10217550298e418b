import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { EmbeddedJWK, SignJWT, calculateJwkThumbprint, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, type JWK, type JWTPayload } from 'jose'
import { DpopProver, McpHttpError, PureHttpClient, dpopKeyFromJwk, generateDpopKey, type DpopKey } from '../../src/client/client.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { PureHttpTransport } from '../../src/client/sdk-transport.js'
import { McpServer } from '../../src/core/mcp-server.js'
import type { OAuthOptions } from '../../src/auth/oauth.js'
import { buildServer } from '../../src/server.js'
import { run } from '../helpers/cli-run.js'
import { freePort } from '../helpers/redis-server.js'

/*
 * The client's DPoP (RFC 9449): against our own resource server (which checks every proof) end to
 * end, nonce retry included, and against a scripted server that shows what the proofs hold.
 */

const ISSUER = 'https://auth.example.test'
const as = await generateKeyPair('ES256', { extractable: true })
const JWKS = { keys: [{ ...(await exportJWK(as.publicKey)), kid: 'as-1', alg: 'ES256' }] }

async function boundToken(key: DpopKey, audience: string): Promise<string> {
  return new SignJWT({ sub: 'alice', cnf: { jkt: await calculateJwkThumbprint(key.publicJwk as JWK) } })
    .setProtectedHeader({ alg: 'ES256', kid: 'as-1' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(as.privateKey)
}

/** Our server with DPoP on a real socket; its audience is the socket's own URL (no proxy in front). */
async function serve(t: Test, dpop: OAuthOptions['dpop']): Promise<{ url: string; statuses: number[] }> {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'whoami' }, (_args, ctx) => ctx.principal.id)
  // The port first, so that the audience can name it.
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const app = await buildServer({ mcp, logger: false, oauth: { issuer: ISSUER, audience: url, jwks: JWKS, dpop } })
  const statuses: number[] = []
  app.addHook('onResponse', async (_request, reply) => void statuses.push(reply.statusCode))
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port })
  return { url, statuses }
}

t.test('the client sends a fresh proof with every request; a nonce is fetched once, then remembered', async (t) => {
  const s = await serve(t, { required: true, nonce: { secret: 'a nonce secret of thirty-two bytes or more' } })
  const key = generateDpopKey()
  const client = new PureHttpClient({ url: s.url, token: await boundToken(key, s.url), dpop: key })
  t.same((await client.listTools()).map((x) => x.name), ['whoami'])
  t.same(s.statuses, [401, 200], 'use_dpop_nonce, then the same request with the nonce')
  const result = await client.callTool('whoami', {})
  t.same(result.content, [{ type: 'text', text: `${ISSUER}|alice` }])
  t.same(await client.callTool('whoami', {}).then((r) => r.content), result.content, 'a second call: a new proof (the first one would be a replay)')
  t.same(s.statuses, [401, 200, 200, 200], 'the nonce was remembered: no 401 more')

  const stolen = new PureHttpClient({ url: s.url, token: await boundToken(key, s.url), dpop: generateDpopKey() })
  const err = await stolen.listTools().catch((e: unknown) => e)
  t.match(err, { status: 401, message: 'The access token is bound to another key than the DPoP proof' }, 'a token with another key than its own')
  t.ok(err instanceof McpHttpError)
})

t.test('the official SDK over PureHttpTransport, with a DPoP-bound token', async (t) => {
  const s = await serve(t, { required: true, nonce: { secret: 'a nonce secret of thirty-two bytes or more' } })
  const key = generateDpopKey()
  const client = new Client({ name: 'sdk-dpop', version: '1.0.0' })
  await client.connect(new PureHttpTransport({ url: s.url, token: await boundToken(key, s.url), dpop: key, protocolVersion: '2026-07-28' }))
  t.teardown(() => client.close())
  t.same((await client.listTools()).tools.map((x) => x.name), ['whoami'])
  t.same((await client.callTool({ name: 'whoami', arguments: {} })).content, [{ type: 'text', text: `${ISSUER}|alice` }])
})

t.test('every key kind signs proofs our server accepts', async (t) => {
  const s = await serve(t, { algorithms: ['ES256', 'ES384', 'ES512', 'EdDSA', 'RS256', 'PS256'] })
  for (const alg of ['ES256', 'ES384', 'ES512', 'EdDSA', 'RS256', 'PS256']) {
    const key = generateDpopKey(alg)
    const client = new PureHttpClient({ url: s.url, token: await boundToken(key, s.url), dpop: key })
    t.same((await client.callTool('whoami', {})).content, [{ type: 'text', text: `${ISSUER}|alice` }], alg)
  }
})

t.test('keys from a private JWK: alg from the key or its curve; public or unknown ones refused', async (t) => {
  const ec = generateDpopKey('ES384').privateKey.export({ format: 'jwk' })
  t.equal(dpopKeyFromJwk(ec).alg, 'ES384', 'by curve')
  t.notOk('d' in dpopKeyFromJwk(ec).publicJwk, 'the public JWK has no private part')
  t.equal(dpopKeyFromJwk(generateDpopKey('EdDSA').privateKey.export({ format: 'jwk' })).alg, 'EdDSA')
  const rsa = generateDpopKey('PS256').privateKey.export({ format: 'jwk' })
  t.equal(dpopKeyFromJwk({ ...rsa, alg: 'PS256' }).alg, 'PS256', 'an RSA key with its alg')
  t.throws(() => dpopKeyFromJwk(rsa), { message: /needs "alg"/ })
  t.throws(() => dpopKeyFromJwk({ ...ec, d: undefined }), { message: /private JWK/ })
  t.throws(() => dpopKeyFromJwk({ ...ec, alg: 'HS256' }), { message: /HS256 is not one of/ })
  t.throws(() => new PureHttpClient({ url: 'http://127.0.0.1:1', dpop: generateDpopKey() }), { message: /dpop needs the token/ })
})

interface Seen {
  authorization: string | undefined
  header: ReturnType<typeof decodeProtectedHeader>
  payload: JWTPayload
}

/** A server that answers from a script and verifies and records every proof. */
async function scripted(t: Test, answer: (n: number) => { status: number; headers: Record<string, string> }): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer(async (req: IncomingMessage, res) => {
    req.resume()
    await once(req, 'end')
    const proof = req.headers.dpop as string
    const { payload } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt' })
    seen.push({ authorization: req.headers.authorization, header: decodeProtectedHeader(proof), payload })
    const { status, headers } = answer(seen.length)
    res.writeHead(status, { 'content-type': 'application/json', ...headers })
    res.end(status === 200 ? '{"tools":[]}' : '{"code":-32600,"message":"nope"}')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/base`, seen }
}

t.test('what a proof holds; a nonce on a success is taken; a server that keeps asking gets one retry', async (t) => {
  const nonceChallenge = { 'www-authenticate': 'DPoP error="use_dpop_nonce", algs="ES256"' }
  const s = await scripted(t, (n) => (n === 1 ? { status: 200, headers: { 'dpop-nonce': 'n-1' } } : { status: 401, headers: { ...nonceChallenge, 'dpop-nonce': `n-${n}` } }))
  const key = generateDpopKey('EdDSA')
  const client = new PureHttpClient({ url: s.url, token: 'the-token', dpop: key })
  await client.listTools()
  const [first] = s.seen
  t.equal(first!.authorization, 'DPoP the-token')
  t.match(first!.header, { typ: 'dpop+jwt', alg: 'EdDSA', jwk: { kty: 'OKP', crv: 'Ed25519' } })
  t.notOk('d' in (first!.header.jwk as object))
  t.match(first!.payload, { htm: 'GET', htu: `${s.url}/tools`, ath: createHash('sha256').update('the-token').digest('base64url'), jti: /^[0-9a-f-]{36}$/ })
  t.notOk('nonce' in first!.payload, 'no nonce before the server gives one')
  t.ok(Math.abs((first!.payload.iat as number) - Date.now() / 1000) < 5, 'iat is now')
  const err = await client.callTool('whoami', {}).catch((e: unknown) => e)
  t.match(err, { status: 401 }, 'the second 401 is the answer')
  t.equal(s.seen.length, 3, 'one retry, not more')
  t.match([s.seen[1]!.payload, s.seen[2]!.payload], [{ htm: 'POST', htu: `${s.url}/tools/whoami/calls`, nonce: 'n-1' }, { nonce: 'n-2' }], 'the nonce a success brought, then the one the 401 brought')
  t.not(s.seen[1]!.payload.jti, s.seen[2]!.payload.jti, 'a fresh jti on the retry')
  const prover = new DpopProver(key)
  t.equal(prover.heard(new Response(null, { status: 401, headers: { 'www-authenticate': 'DPoP error="invalid_dpop_proof"' } })), false, 'a 401 without a nonce is not retried')
  t.equal(prover.heard(new Response(null, { status: 401, headers: { 'dpop-nonce': 'x' } })), false, 'nor one that is not use_dpop_nonce')
  t.equal(prover.nonce, 'x')
  const { payload } = await jwtVerify(prover.proof('GET', 'http://h.test/x?q=1#f', 't'), EmbeddedJWK)
  t.match(payload, { htu: 'http://h.test/x', nonce: 'x' }, 'htu without query and fragment')
})

t.test('the CLI: --dpop-key with --token against a server that requires DPoP', async (t) => {
  const s = await serve(t, { required: true, nonce: { secret: 'a nonce secret of thirty-two bytes or more' } })
  const key = generateDpopKey()
  const dir = t.testdir()
  const file = join(dir, 'dpop.json')
  writeFileSync(file, JSON.stringify(key.privateKey.export({ format: 'jwk' })))
  const token = await boundToken(key, s.url)
  const ok = await run(['--url', s.url, '--token', token, '--dpop-key', file, 'call', 'whoami'])
  t.same([ok.code, ok.stdout], [0, `${ISSUER}|alice\n`])
  const bearer = await run(['--url', s.url, '--token', token, 'tools'])
  t.match([bearer.code, bearer.stderr], [1, /requires DPoP-bound access tokens/], 'without the key: refused')
  const noToken = await run(['--url', s.url, '--dpop-key', file, 'tools'])
  t.match([noToken.code, noToken.stderr], [2, /--dpop-key needs --token/])
  const missing = await run(['--url', s.url, '--token', token, '--dpop-key', join(dir, 'nope.json'), 'tools'])
  t.match([missing.code, missing.stderr], [2, /--dpop-key: .*nope\.json is not a readable JWK file/])
  writeFileSync(join(dir, 'public.json'), JSON.stringify(key.publicJwk))
  const pub = await run(['--url', s.url, '--token', token, '--dpop-key', join(dir, 'public.json'), 'tools'])
  t.match([pub.code, pub.stderr], [2, /--dpop-key: DPoP: the key must be a private JWK/])
})
