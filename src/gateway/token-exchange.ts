import { createHash } from 'node:crypto'
import { decodeJwt } from 'jose'
import type { KeyLookup } from '../auth/api-keys.js'
import { isLoopbackHost } from '../auth/origin.js'
import { BEARER, DPOP } from '../auth/take-header.js'
import type { Logger } from '../core/request-context.js'
import { errors, messageOf, type McpError } from '../errors.js'

/**
 * OAuth 2.0 Token Exchange (RFC 8693) for a Streamable HTTP upstream that acts for each user: each
 * request made for a caller carries a token the authorization server issued for the upstream, in
 * exchange for the caller's own access token.
 * @example
 * const tokenExchange: TokenExchangeSpec = {
 *   tokenUrl: 'https://auth.example.com/token',
 *   clientId: 'mcp-gateway',
 *   clientSecret: process.env.EXCHANGE_SECRET!,
 *   audience: 'https://tickets.example.com/mcp'
 * }
 */
export interface TokenExchangeSpec {
  /** The authorization server's token endpoint: https, or http on a loopback host. */
  tokenUrl: string
  /** The gateway's own client at the authorization server (`client_secret_basic`). */
  clientId: string
  clientSecret: string
  /** RFC 8693 `audience`, `resource` and `scope` of the token asked for, each when set. */
  audience?: string
  resource?: string
  scope?: string
}

/** The calling client, as the gateway keeps it for the work its request starts. */
export interface Caller {
  /** Its `Authorization` header, as sent. */
  authorization: string | undefined
  /** The gateway's API keys: a bearer that is one of them names no user. */
  keys: KeyLookup | undefined
}

/** The fetch an upstream's transport uses (the SDK passes a URL and its init). */
export type UpstreamFetch = (url: string | URL, init?: RequestInit) => Promise<Response>

export const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'

/** How long a token whose answer has no `expires_in` is used: a guess, so a short one. */
export const DEFAULT_LIFETIME_MS = 60_000
// A token is dropped this long before it expires (a tenth of its life for short ones), so that
// one taken from the cache does not expire on its way upstream.
const MARGIN_MS = 30_000
const MAX_ENTRIES = 10_000
const TIMEOUT_MS = 10_000
const MAX_ANSWER_BYTES = 64 * 1024
// The refusals that say the gateway's own client is wrong (its configuration), not the caller's token.
const CLIENT_ERRORS = new Set(['invalid_client', 'unauthorized_client', 'unsupported_grant_type'])
// RFC 6750's b64token: what an `Authorization: Bearer` header can carry.
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
// RFC 6749 section 5.2's `error` characters; longer codes are not codes.
const ERROR_CODE = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$/

/** What is wrong with a token endpoint's URL (it must be https, or http on a loopback host), or undefined. */
export function tokenUrlProblem(tokenUrl: string): string | undefined {
  let url: URL
  try {
    url = new URL(tokenUrl)
  } catch {
    return 'is not a URL'
  }
  // The request carries the gateway's client secret and a user's token.
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname))) return undefined
  return 'must use https (http only on a loopback host)'
}

export interface ExchangerOptions {
  /** Tokens kept at most (default 10 000); the least recently used goes first. */
  maxEntries?: number
  /** How long an exchange may take (default 10 s). */
  timeoutMs?: number
  now?: () => number
}

/** A token kept for a caller's token, or the authorization server's refusal of that caller's token. */
type Entry = { token: string; until: number } | { refused: string; until: number }

/** How long a refusal of a caller's token is kept: its retries within it are refused at once. */
export const REFUSAL_MS = 30_000
const FIRST_PAUSE_MS = 1000
const MAX_PAUSE_MS = 60_000

/**
 * Exchanges callers' access tokens for the upstream's, and keeps each until shortly before it
 * expires (never past the caller's own token's `exp`), keyed by the SHA-256 of the caller's token,
 * never by the token itself. Concurrent requests for one caller token share one exchange. A refusal
 * of a caller's token is kept {@link REFUSAL_MS} (a client retrying a token the authorization server
 * refused would otherwise ask it again each time). A failure that is not the caller's (the server
 * unreachable, failing, refusing the gateway's own client) pauses every exchange: for 1 s, doubling
 * to 60 s while it goes on, requests fail at once with it; the first request after the pause tries
 * again, and a success ends it.
 */
export class TokenExchanger {
  readonly #cache = new Map<string, Entry>()
  readonly #pending = new Map<string, Promise<Entry>>()
  readonly #spec: TokenExchangeSpec
  readonly #upstream: string
  readonly #log: Logger
  readonly #max: number
  readonly #timeoutMs: number
  readonly #now: () => number
  readonly #basic: string

  constructor(spec: TokenExchangeSpec, upstream: string, log: Logger, options: ExchangerOptions = {}) {
    this.#spec = spec
    this.#upstream = upstream
    this.#log = log
    this.#max = options.maxEntries ?? MAX_ENTRIES
    this.#timeoutMs = options.timeoutMs ?? TIMEOUT_MS
    this.#now = options.now ?? Date.now
    // RFC 6749 section 2.3.1: each part form-encoded before Basic's base64.
    this.#basic = `Basic ${Buffer.from(`${formEncoded(spec.clientId)}:${formEncoded(spec.clientSecret)}`).toString('base64')}`
  }

  /** How many tokens are kept. */
  get size(): number {
    return this.#cache.size
  }

  /** How many requests wait for an exchange in flight (each exchange counts its first). */
  waiting = 0

  /** The upstream's access token for the caller whose access token is `subject`. */
  async accessTokenFor(subject: string): Promise<string> {
    const key = createHash('sha256').update(subject).digest('base64url')
    const kept = this.#cache.get(key)
    if (kept !== undefined) {
      this.#cache.delete(key)
      if (kept.until > this.#now()) {
        this.#cache.set(key, kept)
        return tokenOf(kept, this.#upstream)
      }
    }
    const paused = this.#paused
    if (paused !== undefined && this.#now() < paused.until) throw errors.tokenExchangeFailed(this.#upstream, paused.why)
    let pending = this.#pending.get(key)
    this.waiting++
    try {
      if (pending === undefined) {
        pending = this.#exchange(subject).finally(() => this.#pending.delete(key))
        this.#pending.set(key, pending)
        const entry = await pending
        this.#cache.set(key, entry)
        for (const oldest of this.#cache.keys()) {
          if (this.#cache.size <= this.#max) break
          this.#cache.delete(oldest)
        }
        return tokenOf(entry, this.#upstream)
      }
      return tokenOf(await pending, this.#upstream)
    } finally {
      this.waiting--
    }
  }

  /** Since the last failure that was not the caller's: why, when exchanges may be tried again, and the pause. */
  #paused: { why: string; until: number; pauseMs: number } | undefined

  async #exchange(subject: string): Promise<Entry> {
    const { tokenUrl, audience, resource, scope } = this.#spec
    const form = new URLSearchParams({
      grant_type: GRANT_TYPE,
      subject_token: subject,
      subject_token_type: ACCESS_TOKEN_TYPE,
      requested_token_type: ACCESS_TOKEN_TYPE
    })
    if (audience !== undefined) form.set('audience', audience)
    if (resource !== undefined) form.set('resource', resource)
    if (scope !== undefined) form.set('scope', scope)
    const started = this.#now()
    let status: number
    let answer: unknown
    try {
      // Never a redirect: the request carries the client secret and the caller's token.
      const res = await fetch(tokenUrl, {
        method: 'POST',
        headers: { authorization: this.#basic, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        redirect: 'error',
        signal: AbortSignal.timeout(this.#timeoutMs)
      })
      status = res.status
      answer = await jsonOf(res)
    } catch (err) {
      const why = (err as Error).name === 'TimeoutError' ? `did not answer in ${this.#timeoutMs / 1000} s` : 'cannot be reached'
      throw this.#failed(why, { reason: messageOf(err), cause: messageOf((err as Error).cause ?? '') })
    }
    const fields = (answer ?? {}) as Record<string, unknown>
    if (status !== 200) {
      const code = typeof fields.error === 'string' && ERROR_CODE.test(fields.error) ? fields.error : undefined
      // Its description may quote what it was sent: the code is enough, in the log and the answer.
      if (code === undefined || status >= 500) throw this.#failed(`answered ${status}`, { status, error: code })
      if (CLIENT_ERRORS.has(code)) throw this.#failed(`refused the gateway's client (${code})`, { status, error: code })
      this.#log.info({ upstream: this.#upstream, tokenUrl, status, error: code }, 'token exchange refused')
      this.#paused = undefined
      return { refused: code, until: Math.min(started + REFUSAL_MS, expiryOf(subject)) }
    }
    const { access_token: token, token_type: type, expires_in: expiresIn } = fields
    if (typeof token !== 'string' || !B64TOKEN.test(token) || typeof type !== 'string' || type.toLowerCase() !== 'bearer') {
      throw this.#failed('answered without a Bearer access_token', { status })
    }
    const lifetime = typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn * 1000 : undefined
    const until = Math.min(
      lifetime === undefined ? started + DEFAULT_LIFETIME_MS : started + lifetime - Math.min(MARGIN_MS, lifetime / 10),
      expiryOf(subject)
    )
    this.#log.debug({ upstream: this.#upstream, expiresIn: lifetime === undefined ? null : expiresIn, keptMs: until - started }, 'token exchanged')
    this.#paused = undefined
    return { token, until }
  }

  #failed(why: string, details: Record<string, unknown>): McpError {
    const pauseMs = Math.min(MAX_PAUSE_MS, Math.max(FIRST_PAUSE_MS, (this.#paused?.pauseMs ?? 0) * 2))
    this.#paused = { why, until: this.#now() + pauseMs, pauseMs }
    this.#log.warn({ upstream: this.#upstream, tokenUrl: this.#spec.tokenUrl, pauseMs, ...details }, 'token exchange failed')
    return errors.tokenExchangeFailed(this.#upstream, why)
  }
}

/** The token of an entry, or its refusal thrown. */
function tokenOf(entry: Entry, upstream: string): string {
  if ('refused' in entry) throw errors.tokenExchangeRefused(upstream, entry.refused)
  return entry.token
}

/** The answer's JSON (undefined when it is none, or larger than an answer of a token endpoint). */
async function jsonOf(res: Response): Promise<unknown> {
  const chunks: Uint8Array[] = []
  let bytes = 0
  for await (const chunk of res.body ?? []) {
    bytes += chunk.length
    // Leaving the loop cancels the rest of the body.
    if (bytes > MAX_ANSWER_BYTES) return undefined
    chunks.push(chunk)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    return undefined
  }
}

/** application/x-www-form-urlencoded, as RFC 6749 section 2.3.1 wants the client id and secret. */
function formEncoded(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2)
}

/** The `exp` of a JWT, read without verifying (the gateway has verified it), in ms; else no bound. */
function expiryOf(token: string): number {
  try {
    const { exp } = decodeJwt(token)
    return typeof exp === 'number' ? exp * 1000 : Infinity
  } catch {
    return Infinity
  }
}

const exchangers = new WeakMap<TokenExchangeSpec, TokenExchanger>()

/** The exchanger serving `spec`, once an upstream with it has connected. */
export function exchangerOf(spec: TokenExchangeSpec): TokenExchanger | undefined {
  return exchangers.get(spec)
}

/**
 * A fetch for an upstream with `spec`: a request made for a caller carries the upstream's token for
 * that caller; the gateway's own requests (initialize, the lists, pings: no caller) go as they are,
 * with the configured headers. A caller without a user's bearer token (none, another scheme, or one
 * of the gateway's API keys) is refused: an upstream that acts for each user is never called as
 * nobody. One exchanger (one cache) per spec, whichever connection or era asks.
 */
export function exchanging(spec: TokenExchangeSpec, upstream: string, log: Logger, current: () => Caller | undefined): UpstreamFetch {
  let exchanger = exchangers.get(spec)
  if (exchanger === undefined) exchangers.set(spec, (exchanger = new TokenExchanger(spec, upstream, log)))
  const ours = exchanger
  return async (url, init) => {
    const caller = current()
    if (caller === undefined) return fetch(url, init)
    // Bearer or DPoP-bound (RFC 9449): the authorization server decides whether it exchanges a bound one.
    const authorization = caller.authorization ?? ''
    const subject = (BEARER.exec(authorization) ?? DPOP.exec(authorization))?.[1]
    if (subject === undefined || caller.keys?.(subject) !== undefined) throw errors.userTokenRequired(upstream)
    const headers = new Headers(init!.headers)
    headers.set('authorization', `Bearer ${await ours.accessTokenFor(subject)}`)
    return fetch(url, { ...init, headers })
  }
}
