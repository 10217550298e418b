import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors as jose,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey
} from 'jose'
import { ConfigurationError } from '../errors.js'
import type { BearerAuthOptions } from './bearer.js'
import { isLoopbackHost } from './origin.js'

/** Signature algorithms accepted when none are configured: asymmetric only. */
export const DEFAULT_ALGORITHMS: readonly string[] = Object.freeze(['RS256', 'ES256', 'EdDSA', 'PS256'])
const ASYMMETRIC = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'])
const SYMMETRIC = new Set(['HS256', 'HS384', 'HS512'])

/**
 * Check the options once (a {@link ConfigurationError} names what is wrong) and prepare the
 * verification of one token: signature with the key of its algorithm family, `iss`, `aud`, `exp`,
 * `nbf` with the clock tolerance, and the presence of `sub` and `exp`. Rejections are jose errors.
 */
export function tokenVerifier(options: BearerAuthOptions): (token: string) => Promise<JWTPayload> {
  const issuers = typeof options.issuer === 'string' ? [options.issuer] : [...options.issuer]
  if (issuers.length === 0 || issuers.some((i) => i === '')) throw new ConfigurationError('bearerAuth: issuer is required')
  if (typeof options.audience !== 'string' || options.audience === '') {
    throw new ConfigurationError("bearerAuth: audience (this server's resource URI) is required")
  }
  const algorithms = [...(options.algorithms ?? DEFAULT_ALGORITHMS)]
  if (algorithms.length === 0) throw new ConfigurationError('bearerAuth: algorithms must not be empty')
  for (const alg of algorithms) {
    if (!ASYMMETRIC.has(alg) && !SYMMETRIC.has(alg)) {
      throw new ConfigurationError(`bearerAuth: algorithm "${alg}" is not accepted (allowed: ${[...ASYMMETRIC, ...SYMMETRIC].join(', ')})`)
    }
  }
  const wantsSecret = algorithms.some((a) => SYMMETRIC.has(a))
  const wantsKeySet = algorithms.some((a) => ASYMMETRIC.has(a))
  const hasKeySet = options.jwksUrl !== undefined || options.jwks !== undefined
  if (wantsSecret !== (options.secret !== undefined)) {
    throw new ConfigurationError(
      wantsSecret ? 'bearerAuth: HS* algorithms need a secret' : 'bearerAuth: a secret is only used with HS* algorithms; list them explicitly'
    )
  }
  if (wantsKeySet !== hasKeySet) {
    throw new ConfigurationError(
      wantsKeySet ? 'bearerAuth: jwksUrl or jwks is required' : 'bearerAuth: jwksUrl and jwks are only used with asymmetric algorithms'
    )
  }
  const secret = typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : options.secret
  if (secret !== undefined && secret.byteLength < 32) throw new ConfigurationError('bearerAuth: the HS* secret must be at least 32 bytes')
  const keySet = wantsKeySet ? keySetOf(options) : undefined
  // Each alg family has its own key source: an HS token is never checked against a public key.
  const key: JWTVerifyGetKey = (header, token) => (SYMMETRIC.has(header.alg) ? secret! : keySet!(header, token))
  const clockTolerance = options.clockToleranceSec ?? 30
  if (!Number.isFinite(clockTolerance) || clockTolerance < 0) {
    throw new ConfigurationError('bearerAuth: clockToleranceSec must be a non-negative number')
  }
  const verifyOptions = { issuer: issuers, audience: options.audience, algorithms, clockTolerance, requiredClaims: ['sub', 'exp'] }
  return async (token) => (await jwtVerify(token, key, verifyOptions)).payload
}

function keySetOf(options: BearerAuthOptions): JWTVerifyGetKey {
  const local = options.jwks === undefined ? undefined : staticKeySet(options.jwks)
  if (options.jwksUrl === undefined) return local!
  const remoteUrl = parseUrl(options.jwksUrl, 'jwksUrl')
  if (remoteUrl.protocol !== 'https:' && !(remoteUrl.protocol === 'http:' && isLoopbackHost(remoteUrl.hostname))) {
    throw new ConfigurationError('bearerAuth: jwksUrl must use https (http only on a loopback host)')
  }
  const remote = backingOff(createRemoteJWKSet(remoteUrl))
  if (local === undefined) return remote
  // Static keys first (pinned), then the authorization server's current ones.
  return async (header, token) => {
    try {
      return await local(header, token)
    } catch (err) {
      if (err instanceof jose.JWKSNoMatchingKey) return remote(header, token)
      throw err
    }
  }
}

/** Failures of the key set itself (unreachable, not JSON, bad keys): the server's problem, not the token's. */
export const KEY_SET_FAILURES: ReadonlySet<string> = new Set(['ERR_JOSE_GENERIC', 'ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JWK_INVALID'])

/** True for an error that says the key set could not be had (a network error has no jose code). */
export function isKeySetFailure(err: unknown): boolean {
  const code = err instanceof jose.JOSEError ? err.code : undefined
  return code === undefined || KEY_SET_FAILURES.has(code)
}

const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 60_000

/**
 * A remote key set that does not fetch again for a while after a fetch failed: jose's cooldown
 * starts only after a success, so while the authorization server fails every token with an unknown
 * `kid` would make one outbound request. After a failure, requests fail at once (the same error, a
 * 503) for 1 s, doubling to 60 s while it keeps failing; a success resets it.
 */
export function backingOff(remote: JWTVerifyGetKey, now: () => number = Date.now): JWTVerifyGetKey {
  let failedAt = 0
  let waitMs = 0
  let failure: unknown
  return async (header, token) => {
    if (waitMs > 0 && now() - failedAt < waitMs) throw failure
    try {
      const key = await remote(header, token)
      waitMs = 0
      return key
    } catch (err) {
      if (isKeySetFailure(err)) {
        failedAt = now()
        waitMs = Math.min(MAX_BACKOFF_MS, Math.max(FIRST_BACKOFF_MS, waitMs * 2))
        failure = err
      }
      throw err
    }
  }
}

function staticKeySet(jwks: JSONWebKeySet): JWTVerifyGetKey {
  try {
    return createLocalJWKSet(jwks)
  } catch (err) {
    throw new ConfigurationError(`bearerAuth: jwks is not a JSON Web Key Set: ${(err as Error).message}`)
  }
}

export function parseUrl(value: string | URL, name: string): URL {
  try {
    return new URL(value)
  } catch {
    throw new ConfigurationError(`bearerAuth: ${name} is not a URL: ${String(value)}`)
  }
}
