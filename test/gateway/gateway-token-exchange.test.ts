/* eslint-disable no-template-curly-in-string -- `${VAR}` in a config file's strings is what the gateway expands */
import { spawn } from 'node:child_process'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { SignJWT, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair } from 'jose'
import { McpServer as SdkServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { apiKeyRing } from '../../src/auth/api-keys.js'
import { McpServer } from '../../src/core/mcp-server.js'
import { watchCallers } from '../../src/gateway/connection.js'
import { exchangerOf } from '../../src/gateway/token-exchange.js'
import { Gateway } from '../../src/gateway/gateway.js'
import { MemoryRelay } from '../../src/gateway/relay.js'
import type { UpstreamSpec } from '../../src/gateway/upstream.js'
import { buildServer } from '../../src/server.js'
import { MemoryStore } from '../../src/store/memory.js'
import { GATEWAY_BIN, serveUpstream, until } from '../helpers/gateway-helper.js'
import { start } from '../helpers/gateway-cli-helper.js'
import { freePort } from '../helpers/redis-server.js'
import { authorizationServer, type AuthorizationServer } from '../helpers/token-exchange-server.js'

const GATEWAY = 'https://gateway.example.test'
const UPSTREAM = 'https://tickets.example.test'
// The gateway's own key at the upstream, for what it asks for itself (initialize, lists).
const GATEWAY_KEY = randomBytes(32).toString('base64url')
// A key clients of the gateway may use: it names no user.
const CLIENT_KEY = randomBytes(32).toString('base64url')

const quiet = { debug() {}, info() {}, warn() {}, error() {} }

/** This project's server on /mcp with OAuth (the test AS's tokens for UPSTREAM) and the gateway's key; `whoami` says who called. */
async function upstream(t: Test, as: AuthorizationServer): Promise<string> {
  const mcp = new McpServer({ name: 'tickets', version: '1' })
  mcp.tool({ name: 'whoami' }, (_args, ctx) => JSON.stringify({ subject: ctx.principal.subject, issuer: ctx.principal.issuer ?? null }))
  const app = await buildServer({
    logger: false,
    mcp,
    store: new MemoryStore(),
    oauth: { issuer: as.issuer, audience: UPSTREAM, jwksUrl: as.jwksUrl },
    apiKeys: [{ principal: 'gateway', key: GATEWAY_KEY }]
  })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
}

/** A gateway to `spec` in this process, with its own OAuth (the AS's tokens for GATEWAY) and CLIENT_KEY, on a socket. */
async function gateway(t: Test, as: AuthorizationServer, spec: UpstreamSpec, dpop?: { required?: boolean }): Promise<{ base: string; gw: Gateway; app: FastifyInstance }> {
  const gw = await Gateway.start({ name: 'tickets', spec, log: quiet, server: {}, relay: new MemoryRelay(), instance: `test-${randomBytes(4).toString('hex')}` })
  const apiKeys = [{ principal: 'ci', key: CLIENT_KEY }]
  const oauth = { issuer: as.issuer, audience: GATEWAY, jwksUrl: as.jwksUrl, ...(dpop === undefined ? {} : { dpop }) }
  const app = await buildServer({ logger: false, mcp: gw.mcp, store: gw.wrapStore(new MemoryStore()), oauth, apiKeys })
  t.teardown(async () => {
    await app.close()
    await gw.close()
  })
  watchCallers(app.server, apiKeyRing(apiKeys))
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, gw, app }
}

async function whoami(base: string, authorization?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/tools/whoami/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
    body: JSON.stringify({ arguments: {} })
  })
  return { status: res.status, body: await res.json() }
}

const subjectOf = (r: { body: any }) => JSON.parse(r.body.content[0].text).subject

t.test('each user reaches the upstream as themselves, by a token exchanged once and kept', async (t) => {
  const as = await authorizationServer(t, { gatewayAudience: GATEWAY, upstreamAudience: UPSTREAM })
  const url = await upstream(t, as)
  const spec = { url, headers: { authorization: `Bearer ${GATEWAY_KEY}` }, tokenExchange: { tokenUrl: as.tokenUrl, clientId: as.clientId, clientSecret: as.clientSecret, audience: UPSTREAM } }
  const { base, gw } = await gateway(t, as, spec)
  t.equal(gw.upstream.state, 'up', 'the gateway connected with its own key')
  t.equal(gw.modern, true, 'and calls go in 2026-07-28')
  t.equal(as.exchanges, 0, 'its own requests exchange nothing')

  const [alice, bob] = [await as.userToken('alice', GATEWAY), await as.userToken('bob', GATEWAY)]
  const asAlice = await whoami(base, `Bearer ${alice}`)
  t.equal(asAlice.status, 200)
  t.same(JSON.parse(asAlice.body.content[0].text), { subject: 'alice', issuer: as.issuer }, 'the upstream verified a token of its own audience for alice')
  t.equal(subjectOf(await whoami(base, `Bearer ${bob}`)), 'bob')
  t.equal(as.exchanges, 2)
  t.equal(subjectOf(await whoami(base, `Bearer ${alice}`)), 'alice')
  t.equal(as.exchanges, 2, "alice's second call used the token kept for her")

  // A short-lived upstream token: kept less than a second, then exchanged again.
  as.expiresIn = 1
  const carol = await as.userToken('carol', GATEWAY)
  t.equal(subjectOf(await whoami(base, `Bearer ${carol}`)), 'carol')
  t.equal(as.exchanges, 3)
  const after = Date.now() + 1100
  await until(() => Date.now() > after, 'the token kept for carol to expire')
  t.equal(subjectOf(await whoami(base, `Bearer ${carol}`)), 'carol')
  t.equal(as.exchanges, 4, 'exchanged again once expired')

  const refused = await whoami(base, `Bearer ${await as.userToken('mallory', GATEWAY)}`)
  t.same(refused, {
    status: 403,
    body: {
      code: -32600,
      message: 'The authorization server refused a token for the upstream server tickets (invalid_grant)',
      data: { upstream: 'tickets', error: 'invalid_grant' }
    }
  })
  const byKey = await whoami(base, `Bearer ${CLIENT_KEY}`)
  t.equal(byKey.status, 403, "an API key's principal: no user to act for")
  t.match(byKey.body, { code: -32600, message: /^The upstream server tickets acts for each user/, data: { upstream: 'tickets' } })
  t.notOk(as.requests.some((r) => r.form.get('subject_token') === CLIENT_KEY), 'the key never went to the authorization server')
  t.equal((await whoami(base)).status, 401, "no token: the gateway's own OAuth refuses first")
})

t.test('a DPoP-bound token is exchanged too: the gateway checks its proof, the authorization server decides', async (t) => {
  const as = await authorizationServer(t, { gatewayAudience: GATEWAY, upstreamAudience: UPSTREAM })
  const url = await upstream(t, as)
  const spec = { url, headers: { authorization: `Bearer ${GATEWAY_KEY}` }, tokenExchange: { tokenUrl: as.tokenUrl, clientId: as.clientId, clientSecret: as.clientSecret, audience: UPSTREAM } }
  const { base } = await gateway(t, as, spec, {})
  const key = await generateKeyPair('ES256', { extractable: true })
  const jwk = await exportJWK(key.publicKey)
  const alice = await as.userToken('alice', GATEWAY, { cnf: { jkt: await calculateJwkThumbprint(jwk) } })
  // The proof names the gateway's public URL (its OAuth audience), as behind a proxy.
  const proof = () =>
    new SignJWT({ jti: randomUUID(), htm: 'POST', htu: `${GATEWAY}/tools/whoami/calls`, iat: Math.floor(Date.now() / 1000), ath: createHash('sha256').update(alice).digest('base64url') })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
      .sign(key.privateKey)
  const call = async (headers: Record<string, string>) => {
    const res = await fetch(`${base}/tools/whoami/calls`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ arguments: {} }) })
    return { status: res.status, body: (await res.json()) as any }
  }
  const bound = await call({ authorization: `DPoP ${alice}`, dpop: await proof() })
  t.equal(bound.status, 200, 'not refused as "no user token"')
  t.equal(subjectOf(bound), 'alice', 'the upstream saw alice, by a token exchanged for the bound one')
  t.equal(as.exchanges, 1)
  t.ok(as.requests.some((r) => r.form.get('subject_token') === alice), 'the bound token was the subject token')
  t.equal(subjectOf(await call({ authorization: `DPoP ${alice}`, dpop: await proof() })), 'alice')
  t.equal(as.exchanges, 1, 'and the token exchanged for it was kept')
  t.equal((await call({ authorization: `DPoP ${alice}` })).status, 401, "without its proof the gateway's own OAuth refuses first")
  t.equal(as.exchanges, 1)
})

t.test('concurrent calls of one user: one exchange', async (t) => {
  const as = await authorizationServer(t, { gatewayAudience: GATEWAY, upstreamAudience: UPSTREAM })
  const url = await upstream(t, as)
  const spec = { url, headers: { authorization: `Bearer ${GATEWAY_KEY}` }, tokenExchange: { tokenUrl: as.tokenUrl, clientId: as.clientId, clientSecret: as.clientSecret, audience: UPSTREAM } }
  const { base } = await gateway(t, as, spec)
  const alice = await as.userToken('alice', GATEWAY)
  // The exchange is answered only once all four calls wait for it: none can be served from the cache.
  let release!: () => void
  as.mode = { kind: 'hold', until: new Promise<void>((resolve) => (release = resolve)) }
  const calls = Promise.all([1, 2, 3, 4].map(() => whoami(base, `Bearer ${alice}`)))
  await until(() => exchangerOf(spec.tokenExchange)?.waiting === 4 && as.requests.length === 1, 'the four calls waiting for the exchange')
  release()
  t.same((await calls).map(subjectOf), ['alice', 'alice', 'alice', 'alice'])
  t.equal(as.requests.length, 1, 'one request to the authorization server')
  t.equal(as.exchanges, 1)
})

t.test('the authorization server down: 502 naming the upstream', async (t) => {
  const as = await authorizationServer(t, { gatewayAudience: GATEWAY, upstreamAudience: UPSTREAM })
  const url = await upstream(t, as)
  const dead = `http://127.0.0.1:${await freePort()}/token`
  const { base } = await gateway(t, as, { url, headers: { authorization: `Bearer ${GATEWAY_KEY}` }, tokenExchange: { tokenUrl: dead, clientId: 'x', clientSecret: 'y' } })
  const res = await whoami(base, `Bearer ${await as.userToken('alice', GATEWAY)}`)
  t.same(res, { status: 502, body: { code: -32603, message: 'Cannot get a token for the upstream server tickets: the authorization server cannot be reached' } })
})

/** A legacy (2025-11-25) Streamable HTTP upstream of the official SDK whose `whoami` says which Authorization it got. */
async function legacyUpstream(t: Test): Promise<string> {
  const server = createServer((req, res) => {
    const mcp = new SdkServer({ name: 'who', version: '1' })
    mcp.registerTool('whoami', { description: 'the Authorization header of this request' }, async (extra) => ({
      content: [{ type: 'text', text: String(extra.requestInfo?.headers.authorization ?? 'none') }]
    }))
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    void mcp.connect(transport).then(() => transport.handleRequest(req, res))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
}

t.test('a legacy upstream (the SDK client) gets the exchanged token too; a caller without one is refused', async (t) => {
  const as = await authorizationServer(t, { gatewayAudience: GATEWAY, upstreamAudience: UPSTREAM })
  const url = await legacyUpstream(t)
  const tokenExchange = { tokenUrl: as.tokenUrl, clientId: as.clientId, clientSecret: as.clientSecret, audience: UPSTREAM }
  const { app, gw } = await serveUpstream(t, { url, headers: { authorization: 'Bearer gateway-own' }, tokenExchange })
  t.equal(gw.modern, false)
  watchCallers(app.server)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const alice = await as.userToken('alice', GATEWAY)
  const got = await whoami(base, `Bearer ${alice}`)
  const sent = String(got.body.content[0].text)
  t.match(sent, /^Bearer /)
  t.match(decodeJwt(sent.slice(7)), { sub: 'alice', aud: UPSTREAM, iss: as.issuer }, "the upstream's token for alice, not hers")
  t.same(await whoami(base), {
    status: 403,
    body: {
      code: -32600,
      message: 'The upstream server upstream acts for each user: call it with an OAuth access token (an API key, or no token, names no user)',
      data: { upstream: 'upstream' }
    }
  }, 'no token (a gateway without OAuth of its own): refused, not called as nobody')
  t.equal((await whoami(base, 'Basic eDp5')).status, 403, 'another scheme names no user either')
})

t.test('gateway --config with tokenExchange: users as themselves; no token, key or secret in the trace log', async (t) => {
  const as = await authorizationServer(t, { gatewayAudience: GATEWAY, upstreamAudience: UPSTREAM })
  const url = await upstream(t, as)
  const dir = mkdtempSync(join(tmpdir(), 'gw-exchange-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'mcp.json')
  const entry = {
    url,
    headers: { Authorization: 'Bearer ${GW_KEY}' },
    tokenExchange: { tokenUrl: as.tokenUrl, clientId: as.clientId, clientSecret: '${TX_SECRET}', audience: UPSTREAM }
  }
  writeFileSync(config, JSON.stringify({ mcpServers: { tickets: entry } }))
  const env = { MCP_OAUTH_AUDIENCE: GATEWAY, MCP_OAUTH_ISSUER: as.issuer, MCP_OAUTH_JWKS_URL: as.jwksUrl, GW_KEY: GATEWAY_KEY, TX_SECRET: as.clientSecret }
  const gw = await start(t, ['gateway', '--config', config], { ...env, MCP_API_KEYS: `ci:${CLIENT_KEY}`, LOG_LEVEL: 'trace' })
  const base = `${gw.base}/tickets`
  t.equal(subjectOf(await whoami(base, `Bearer ${await as.userToken('alice', GATEWAY)}`)), 'alice')
  t.equal(subjectOf(await whoami(base, `Bearer ${await as.userToken('bob', GATEWAY)}`)), 'bob')
  t.equal((await whoami(base, `Bearer ${CLIENT_KEY}`)).status, 403, 'an API key names no user')
  t.equal((await whoami(base, `Bearer ${await as.userToken('mallory', GATEWAY)}`)).status, 403)
  t.equal(as.exchanges, 2)
  // The answers can come before the lines on the pipe.
  await until(() => gw.log().includes('token exchange refused'), 'the refusal logged')
  const log = gw.log()
  t.match(log, /"msg":"token exchanged"/, 'the trace log says what happened...')
  t.match(log, /"error":"invalid_grant".*"msg":"token exchange refused"/)
  t.ok(as.issued.length >= 5)
  for (const secret of [...as.issued, as.clientSecret, GATEWAY_KEY, CLIENT_KEY]) t.notOk(log.includes(secret), '...and holds no token, key or secret')

  // Without OAuth of its own, the gateway would send whatever callers send to the authorization server.
  const child = spawn(process.execPath, [GATEWAY_BIN, 'gateway', '--config', config], {
    env: { ...process.env, PORT: '0', GW_KEY: GATEWAY_KEY, TX_SECRET: as.clientSecret },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let err = ''
  child.stderr!.on('data', (d: Buffer) => (err += String(d)))
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(err, /gateway: tickets has tokenExchange, which exchanges the OAuth access tokens this gateway verifies: set MCP_OAUTH_AUDIENCE/)
  t.notOk(err.includes(as.clientSecret))
})
