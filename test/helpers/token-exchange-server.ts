import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, type JWK } from 'jose'
import type { Test } from 'tap'

export const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token'

/** What the test server does with the next exchanges (default: RFC 8693 as it says). */
export type Mode =
  | { kind: 'exchange' }
  /** Answer this status and body as they are (a string body as text). */
  | { kind: 'answer'; status: number; body: unknown }
  /** Take the request and never answer it. */
  | { kind: 'hang' }
  /** Exchange, but answer only once `until` resolves. */
  | { kind: 'hold'; until: Promise<void> }

export interface AuthorizationServer {
  issuer: string
  tokenUrl: string
  jwksUrl: string
  clientId: string
  clientSecret: string
  /** Successful exchanges so far. */
  exchanges: number
  /** Every token request's form parameters and Authorization header. */
  requests: { form: URLSearchParams; authorization: string | undefined }[]
  /** Every token it issued (user tokens and exchanged ones), to look for in logs. */
  issued: string[]
  /** `expires_in` of the next exchanges (undefined: left out of the answer). */
  expiresIn: number | undefined
  mode: Mode
  /** A user's access token for `audience` (the gateway), signed with this server's key; `exp` null: none. */
  userToken(sub: string, audience: string, claims?: Record<string, unknown>, exp?: string | number | null): Promise<string>
  close(): Promise<void>
}

/**
 * A small OAuth authorization server on 127.0.0.1: it issues users' tokens for the gateway and
 * exchanges them (RFC 8693) for tokens of `upstreamAudience`, the same `sub`, after checking the
 * client (`client_secret_basic`, form-encoded id and secret) and the subject token (its signature,
 * issuer, `gatewayAudience`, expiry). Its JWKS is at `/jwks`, so the gateway and the upstream verify
 * what it signs.
 */
export async function authorizationServer(
  t: Test,
  options: { gatewayAudience: string; upstreamAudience: string; clientId?: string; clientSecret?: string }
): Promise<AuthorizationServer> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'as-1', alg: 'ES256', use: 'sig' }
  const keySet = createLocalJWKSet({ keys: [jwk] })
  const sign = (claims: Record<string, unknown>, audience: string, exp: string | number | null) => {
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'as-1' }).setIssuer(as.issuer).setAudience(audience).setIssuedAt()
    return (exp === null ? jwt : jwt.setExpirationTime(exp)).sign(privateKey)
  }
  const refuse = (res: ServerResponse, status: number, error: string, description: string) => json(res, status, { error, error_description: description })
  const server = createServer((req, res) => void handle(req, res))
  const held = new Set<ServerResponse>()
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.url === '/jwks') return json(res, 200, { keys: [jwk] })
    let text = ''
    for await (const chunk of req) text += String(chunk)
    const form = new URLSearchParams(text)
    as.requests.push({ form, authorization: req.headers.authorization })
    const mode = as.mode
    if (mode.kind === 'hang') return void held.add(res)
    if (mode.kind === 'hold') await mode.until
    if (mode.kind === 'answer') {
      res.writeHead(mode.status, { 'content-type': typeof mode.body === 'string' ? 'text/html' : 'application/json' })
      return void res.end(typeof mode.body === 'string' ? mode.body : JSON.stringify(mode.body))
    }
    // client_secret_basic: RFC 6749 section 2.3.1 form-encodes each part before base64.
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')
    const [id, secret] = basic === null ? [] : Buffer.from(basic[1]!, 'base64').toString().split(':').map((p) => decodeURIComponent(p.replace(/\+/g, ' ')))
    if (id !== as.clientId || secret !== as.clientSecret) return refuse(res, 401, 'invalid_client', 'client authentication failed')
    if (form.get('grant_type') !== GRANT_TYPE) return refuse(res, 400, 'unsupported_grant_type', 'not a token exchange')
    if (form.get('subject_token_type') !== ACCESS_TOKEN || form.get('requested_token_type') !== ACCESS_TOKEN) {
      return refuse(res, 400, 'invalid_request', 'token types')
    }
    if (form.get('audience') !== options.upstreamAudience) return refuse(res, 400, 'invalid_target', `no tokens for ${form.get('audience')}`)
    let sub: string
    try {
      const { payload } = await jwtVerify(form.get('subject_token') ?? '', keySet, { issuer: as.issuer, audience: options.gatewayAudience })
      sub = payload.sub!
    } catch (err) {
      // A description that quotes the token, as careless servers do: the gateway must not pass it on.
      return refuse(res, 400, 'invalid_request', `bad subject_token ${form.get('subject_token')}: ${(err as Error).message}`)
    }
    if (sub === 'mallory') return refuse(res, 400, 'invalid_grant', `${sub} may not use this upstream`)
    const lifetime = as.expiresIn ?? 3600
    const token = await sign({ sub, scope: form.get('scope') ?? undefined }, options.upstreamAudience, `${lifetime}s`)
    as.issued.push(token)
    as.exchanges++
    json(res, 200, {
      access_token: token,
      issued_token_type: ACCESS_TOKEN,
      token_type: 'Bearer',
      ...(as.expiresIn === undefined ? {} : { expires_in: as.expiresIn })
    })
  }
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let closed = false
  const as: AuthorizationServer = {
    issuer: base,
    tokenUrl: `${base}/token`,
    jwksUrl: `${base}/jwks`,
    clientId: options.clientId ?? 'mcp gateway',
    clientSecret: options.clientSecret ?? `s3cret+/:%${Math.random().toString(36).slice(2)}`,
    exchanges: 0,
    requests: [],
    issued: [],
    expiresIn: 3600,
    mode: { kind: 'exchange' },
    async userToken(sub, audience, claims = {}, exp = '5m') {
      const token = await sign({ sub, ...claims }, audience, exp)
      as.issued.push(token)
      return token
    },
    async close() {
      if (closed) return
      closed = true
      for (const res of held) res.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
  t.teardown(() => as.close())
  return as
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
  res.end(JSON.stringify(body))
}
