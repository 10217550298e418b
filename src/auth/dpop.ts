import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { EmbeddedJWK, calculateJwkThumbprint, decodeProtectedHeader, errors as jose, jwtVerify, type JWK, type JWTPayload } from 'jose'
import { ConfigurationError } from '../errors.js'
import type { OnceKeys } from '../store/types.js'

/** DPoP (RFC 9449, MCP's SEP-1932) on the resource server: `Authorization: DPoP <token>` with a proof. */
export interface DpopOptions {
  /** Every access token must be DPoP-bound (default false: unbound tokens are accepted as `Bearer`). */
  required?: boolean
  /** Accepted proof algorithms, asymmetric only (default ES256, EdDSA, RS256, PS256). */
  algorithms?: readonly string[]
  /** How far a proof's `iat` may be from this server's clock, either way, in seconds (default 300). */
  iatWindowSec?: number
  /**
   * Server nonces (RFC 9449 section 9): every proof must carry the current one. Stateless: a time
   * window and an HMAC with `secret` (at least 32 bytes, the same on every instance), so any
   * instance accepts a nonce any other made; the current and the previous window are accepted.
   */
  nonce?: { secret: string | Uint8Array; windowSec?: number }
  /** Where proof ids are remembered (default: this process' memory; `mcpPlugin` gives its store's). */
  replay?: OnceKeys
}

export const DEFAULT_DPOP_ALGORITHMS: readonly string[] = Object.freeze(['ES256', 'EdDSA', 'RS256', 'PS256'])
const DPOP_ALGORITHMS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'])
// Members of a private or symmetric JWK: a proof's key is public (RFC 9449 section 4.3 step 7).
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']
// Proof ids are random strings (16 bytes base64url is 22 characters); this leaves room for any scheme.
const MAX_JTI = 256
// Other instances' clocks may run behind ours: a proof id is kept this much past its window.
const REPLAY_MARGIN_MS = 60_000

/** Why a proof is refused: `kind`, the `error` of the DPoP challenge, and the words of the 401. */
export class DpopRefusal extends Error {
  constructor(
    readonly kind: 'invalid_dpop_proof' | 'invalid_token' | 'use_dpop_nonce',
    message: string,
    /** For the log: what exactly failed. */
    readonly reason: string,
    /** The `DPoP-Nonce` to send with the 401 (`use_dpop_nonce`). */
    readonly nonce?: string
  ) {
    super(message)
  }
}

/** A checked proof: its key's RFC 7638 thumbprint, and a newer nonce to send when the client's is rolling out. */
export interface CheckedProof {
  jkt: string
  freshNonce: string | undefined
}

export interface DpopChecker {
  /** The accepted algorithms, for the challenges' `algs` and the metadata. */
  readonly algorithms: readonly string[]
  readonly required: boolean
  /**
   * RFC 9449 section 4.3 for a proof sent with `token`: every step but the binding, which needs the
   * verified token (see {@link bind}). Throws a {@link DpopRefusal}.
   */
  check(proof: string, token: string, request: FastifyRequest): Promise<CheckedProof & { jti: string; iat: number }>
  /** The token's `cnf.jkt` is the proof's key, and the proof's `jti` was never used before (on any instance). */
  bind(payload: JWTPayload, proof: CheckedProof & { jti: string; iat: number }): Promise<void>
}

/**
 * Check the DPoP options once (a {@link ConfigurationError} names what is wrong) and prepare the
 * checking of proofs sent to `audience`, whose origin is this server's public one: a proof's `htu`
 * is compared with that origin plus the request's path, so a proxy in front changes nothing.
 */
export function dpopChecker(options: DpopOptions, audience: string, replay: OnceKeys): DpopChecker {
  const algorithms = [...(options.algorithms ?? DEFAULT_DPOP_ALGORITHMS)]
  if (algorithms.length === 0) throw new ConfigurationError('dpop: algorithms must not be empty')
  for (const alg of algorithms) {
    if (!DPOP_ALGORITHMS.has(alg)) throw new ConfigurationError(`dpop: algorithm "${alg}" is not accepted for proofs (allowed: ${[...DPOP_ALGORITHMS].join(', ')})`)
  }
  const windowSec = options.iatWindowSec ?? 300
  if (!Number.isFinite(windowSec) || windowSec <= 0) throw new ConfigurationError('dpop: iatWindowSec must be a positive number')
  const origin = new URL(audience).origin
  const nonces = options.nonce === undefined ? undefined : nonceMaker(options.nonce, audience)
  const verifyOptions = { typ: 'dpop+jwt', algorithms }

  const invalid = (message: string, reason = message) => new DpopRefusal('invalid_dpop_proof', `Invalid DPoP proof: ${message}`, reason)
  return {
    algorithms,
    required: options.required === true,
    async check(proof, token, request) {
      let header
      try {
        header = decodeProtectedHeader(proof)
      } catch {
        throw invalid('not a JWS')
      }
      if (header.typ !== 'dpop+jwt') throw invalid('typ must be dpop+jwt', `typ ${String(header.typ)}`)
      if (!algorithms.includes(header.alg!)) throw invalid(`alg must be one of ${algorithms.join(', ')}`, `alg ${String(header.alg)}`)
      const jwk = header.jwk as Record<string, unknown> | undefined
      if (typeof jwk !== 'object' || jwk === null) throw invalid('the jwk header is required')
      if (PRIVATE_MEMBERS.some((m) => m in jwk)) throw invalid('the jwk header must be a public key')
      let payload: JWTPayload
      try {
        payload = (await jwtVerify(proof, EmbeddedJWK, verifyOptions)).payload
      } catch (err) {
        throw invalid('the signature does not verify with the jwk header', `${(err as jose.JOSEError).code}: ${(err as Error).message}`)
      }
      const { jti, htm, htu, iat, ath } = payload
      if (typeof jti !== 'string' || jti === '') throw invalid('jti is required')
      // It is kept (in memory or the store) until the proof is stale: bounded, as every key a client makes.
      if (jti.length > MAX_JTI) throw invalid(`jti must be at most ${MAX_JTI} characters`, `jti of ${jti.length}`)
      if (htm !== request.method) throw invalid(`htm must be ${request.method}`, `htm ${String(htm)}`)
      if (typeof htu !== 'string' || comparableUrl(htu) !== comparableUrl(`${origin}${request.raw.url!}`)) {
        throw invalid('htu must be the URL of this request', `htu ${String(htu)}`)
      }
      if (typeof iat !== 'number') throw invalid('iat is required')
      const skewSec = Date.now() / 1000 - iat
      if (Math.abs(skewSec) > windowSec) throw invalid(`iat must be within ${windowSec} s of the server's time`, `iat off by ${Math.round(skewSec)} s`)
      if (ath !== hashOf(token)) throw invalid('ath must be the hash of the access token', 'ath')
      let freshNonce: string | undefined
      if (nonces !== undefined) {
        const age = nonces.age(payload.nonce)
        if (age === undefined) {
          throw new DpopRefusal('use_dpop_nonce', 'The resource server requires a nonce in the DPoP proof: use the DPoP-Nonce header', 'nonce', nonces.current())
        }
        if (age > 0) freshNonce = nonces.current()
      }
      return { jkt: await calculateJwkThumbprint(jwk as JWK, 'sha256'), freshNonce, jti, iat }
    },
    async bind(payload, proof) {
      const cnf = payload.cnf as { jkt?: unknown } | undefined
      if (typeof cnf?.jkt !== 'string') throw new DpopRefusal('invalid_token', 'The access token is not DPoP-bound (it has no cnf.jkt)', 'no cnf.jkt')
      if (cnf.jkt !== proof.jkt) throw new DpopRefusal('invalid_token', 'The access token is bound to another key than the DPoP proof', 'jkt')
      const ttlMs = (proof.iat + windowSec) * 1000 - Date.now() + REPLAY_MARGIN_MS
      if (!(await replay.once(`dpop:${proof.jkt}:${proof.jti}`, ttlMs))) throw invalid('this proof was used before (jti)', 'replayed jti')
    }
  }
}

/** base64url(SHA-256(token)): a proof's `ath` (RFC 9449 section 4.2). */
export function hashOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url')
}

const UNRESERVED = /[A-Za-z0-9\-._~]/
// A window number and 18 bytes of HMAC: anything longer or otherwise is not a nonce of ours.
const NONCE = /^(\d{1,15})\.([A-Za-z0-9_-]{24})$/

/**
 * A URL as RFC 9449 compares `htu`: without query and fragment, after RFC 3986's syntax- and
 * scheme-based normalisation (the URL parser lowercases scheme and host, drops a default port and
 * dot segments; percent-encoded unreserved characters are decoded, other escapes upper-cased).
 * Undefined for what is not an http(s) URL without credentials.
 */
export function comparableUrl(value: string): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return undefined
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '') return undefined
  const path = url.pathname.replace(/%[0-9a-fA-F]{2}/g, (m) => {
    const c = String.fromCharCode(parseInt(m.slice(1), 16))
    return UNRESERVED.test(c) ? c : m.toUpperCase()
  })
  return `${url.protocol}//${url.host}${path}`
}

/**
 * Stateless nonces: `<window>.<HMAC(secret, audience, window)>`, the window being the time divided
 * by `windowSec`. `age` says how many windows old a nonce is (0 current, 1 previous), undefined for
 * any other value.
 */
function nonceMaker(options: NonNullable<DpopOptions['nonce']>, audience: string): { current(): string; age(nonce: unknown): number | undefined } {
  const secret = typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : options.secret
  if (secret.byteLength < 32) throw new ConfigurationError('dpop: the nonce secret must be at least 32 bytes')
  const windowSec = options.windowSec ?? 300
  if (!Number.isInteger(windowSec) || windowSec <= 0) throw new ConfigurationError('dpop: nonce windowSec must be a positive integer')
  const mac = (w: number) => createHmac('sha256', secret).update(`dpop-nonce\n${audience}\n${w}`).digest().subarray(0, 18)
  const windowNow = () => Math.floor(Date.now() / 1000 / windowSec)
  const make = (w: number) => `${w}.${mac(w).toString('base64url')}`
  return {
    current: () => make(windowNow()),
    age(nonce) {
      const m = typeof nonce === 'string' ? NONCE.exec(nonce) : null
      if (m === null) return undefined
      const w = Number(m[1])
      const age = windowNow() - w
      if (age !== 0 && age !== 1) return undefined
      return timingSafeEqual(Buffer.from(m[2]!, 'base64url'), mac(w)) ? age : undefined
    }
  }
}
