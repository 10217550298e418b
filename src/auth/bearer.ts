import type { FastifyReply, FastifyRequest } from 'fastify'
import { errors as jose, type JSONWebKeySet, type JWTPayload } from 'jose'
import type { Principal } from '../core/request-context.js'
import { McpError, errors } from '../errors.js'
import type { KeyLookup } from './api-keys.js'
import { dpopAlgsOf, dpopScheme } from './dpop-auth.js'
import type { DpopOptions } from './dpop.js'
import { BEARER, BEARER_SCHEME, DUPLICATE, takeHeader } from './take-header.js'
import { isKeySetFailure, parseUrl, tokenVerifier } from './verify.js'

export { DEFAULT_ALGORITHMS } from './verify.js'

/** How the resource server checks bearer access tokens (JWTs, RFC 9068 style). */
export interface BearerAuthOptions {
  /** The accepted `iss` value, or several. */
  issuer: string | readonly string[]
  /** This server's resource URI (RFC 8707): a token must name it in `aud`. */
  audience: string
  /** The authorization server's JWKS endpoint (`jwks_uri`); https, or http on a loopback host. */
  jwksUrl?: string | URL
  /** A static JSON Web Key Set (public keys), instead of or besides `jwksUrl`. */
  jwks?: JSONWebKeySet
  /**
   * Accepted `alg` values (default RS256, ES256, EdDSA, PS256). A token whose `alg` is not listed is
   * refused before any key is used, which is what prevents HS/RS confusion. `none` is never accepted;
   * HS256/384/512 only when listed here and a `secret` is given.
   */
  algorithms?: readonly string[]
  /** The shared HMAC key of HS* tokens, at least 32 bytes. Never derived from a public key. */
  secret?: string | Uint8Array
  /** Leeway for `exp` and `nbf`, in seconds (default 30). */
  clockToleranceSec?: number
  /** Where clients find the RFC 9728 metadata; sent as `resource_metadata` in every challenge. */
  resourceMetadataUrl?: string
  /**
   * DPoP-bound access tokens (RFC 9449, SEP-1932): `Authorization: DPoP <token>` with a `DPoP`
   * proof header. See docs/authorization.md. Without it, only Bearer; a bound token (`cnf.jkt`)
   * sent as Bearer is refused either way.
   */
  dpop?: DpopOptions
}

/**
 * Identifies the caller of a request, or throws the 401/503 {@link McpError} to answer. `reply`,
 * when given, takes headers the scheme sends on success (a DPoP scheme's fresh `DPoP-Nonce`).
 */
export type Authenticate = (request: FastifyRequest, reply?: FastifyReply) => Promise<Principal>

/**
 * An OAuth 2.1 resource server: the `authenticate` function of `mcpPlugin` that accepts
 * `Authorization: Bearer <JWT>` signed by the authorization server, for this audience, unexpired.
 * The principal is `${iss}|${sub}` with the scopes of `scope` (space-separated) or `scp`. A request
 * without a token is 401 with the `WWW-Authenticate: Bearer` challenge; a rejected token adds
 * `error="invalid_token"`. The token never reaches handlers: it is removed from the request's
 * headers as soon as it is read, and only the verified claims are kept (no token passthrough).
 * With `keys` (see `apiKeyRing`), a bearer that is one of them is its principal, and any other is
 * verified as a JWT.
 * @example
 * const authenticate = bearerAuth({
 *   issuer: 'https://auth.example.com',
 *   audience: 'https://mcp.example.com',
 *   jwksUrl: 'https://auth.example.com/.well-known/jwks.json'
 * })
 * await app.register(mcpPlugin, { mcp, authenticate })
 */
export function bearerAuth(options: BearerAuthOptions, keys?: KeyLookup): Authenticate {
  const verify = tokenVerifier(options)
  const metadata = options.resourceMetadataUrl === undefined ? '' : `, resource_metadata="${parseUrl(options.resourceMetadataUrl, 'resourceMetadataUrl').href}"`
  const verified = async (token: string, request: FastifyRequest, refuse: Refuse): Promise<JWTPayload> => {
    let payload: JWTPayload
    try {
      payload = await verify(token)
    } catch (err) {
      if (isKeySetFailure(err)) {
        request.log.error({ err }, 'cannot verify access tokens: the key set is unavailable')
        throw errors.authUnavailable(5)
      }
      const code = (err as jose.JOSEError).code
      request.log.info({ reason: code, detail: (err as Error).message }, 'access token rejected')
      throw refuse(code === 'ERR_JWT_EXPIRED' ? 'The access token has expired' : 'Invalid access token', 'invalid_token')
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') {
      request.log.info({ reason: 'no subject' }, 'access token rejected')
      throw refuse('Invalid access token', 'invalid_token')
    }
    return payload
  }
  if (options.dpop !== undefined) return dpopScheme(options.dpop, options.audience, { metadata, keys, verified, principalOf })
  const what = keys === undefined ? 'an OAuth access token' : 'an API key or an OAuth access token'
  return bearerScheme(metadata, what, async (token, request, refuse) => {
    const key = keys?.(token)
    if (key !== undefined) return key
    const payload = await verified(token, request, refuse)
    // RFC 9449 section 7.1: a token bound to a key is worth nothing without the proof of that key.
    if ((payload.cnf as { jkt?: unknown } | undefined)?.jkt !== undefined) {
      request.log.info({ reason: 'bound token as bearer' }, 'access token rejected')
      throw refuse('This access token is DPoP-bound, and this server does not accept DPoP', 'invalid_token')
    }
    return principalOf(payload)
  })
}

/** The principal of verified claims: `${iss}|${sub}`, scopes, the claims themselves. */
function principalOf(payload: JWTPayload): Principal {
  const { iss, sub } = payload
  return Object.freeze({
    id: `${iss}|${sub}`,
    issuer: iss!,
    subject: sub!,
    scopes: Object.freeze(scopesOf(payload)),
    claims: Object.freeze({ ...payload }),
    anonymous: false
  })
}

/**
 * Static API keys alone (no OAuth): `Authorization: Bearer <key>`, one of `keys` (see `apiKeyRing`),
 * is its principal; none or another is 401 with the `WWW-Authenticate: Bearer` challenge. The
 * header is removed from the request as soon as it is read, as {@link bearerAuth} does.
 */
export function apiKeyAuth(keys: KeyLookup): Authenticate {
  return bearerScheme('', 'an API key', async (token, request, refuse) => {
    const key = keys(token)
    if (key !== undefined) return key
    // Never the credential itself: a client's mistyped key is still somebody's secret.
    request.log.info({ reason: 'unknown key' }, 'API key rejected')
    throw refuse('Invalid API key', 'invalid_token')
  })
}

type Refuse = (message: string, error?: string) => McpError

/** Take the `Authorization: Bearer` header off the request and let `check` say who its token is. */
function bearerScheme(
  metadata: string,
  what: string,
  check: (token: string, request: FastifyRequest, refuse: Refuse) => Promise<Principal>
): Authenticate {
  const refuse: Refuse = (message, error) =>
    errors.unauthorized(message, `Bearer realm="mcp"${error === undefined ? '' : `, error="${error}"`}${metadata}`)
  return async (request) => {
    const header = takeHeader(request, 'authorization')
    if (header === undefined) throw refuse(`Authorization required: send ${what} as "Authorization: Bearer <token>"`)
    if (header === DUPLICATE) throw refuse('Send one Authorization header, not several', 'invalid_request')
    const m = BEARER.exec(header)
    if (m === null) {
      if (BEARER_SCHEME.test(header)) throw refuse('Malformed Authorization header: expected "Bearer <token>"', 'invalid_request')
      throw refuse('Authorization required: only the Bearer scheme is supported')
    }
    return check(m[1]!, request, refuse)
  }
}

/** `scope` (RFC 9068, space-separated) or `scp` (an array, or a string as some providers send it). */
function scopesOf(payload: JWTPayload): string[] {
  const raw = payload.scope ?? payload.scp
  const list = typeof raw === 'string' ? raw.split(' ') : Array.isArray(raw) ? raw : []
  return list.filter((s): s is string => typeof s === 'string' && s !== '')
}

/**
 * Add `resource_metadata` to a Bearer challenge that lacks it (the 403 `insufficient_scope` of the
 * core, which does not know where the metadata lives). For a request that `request` shows was
 * authenticated with a DPoP proof, the challenge is in the DPoP scheme (RFC 9449 section 7.1).
 */
export function withResourceMetadata(error: McpError, metadataUrl: string, request?: FastifyRequest): McpError {
  const challenge = error.headers?.['www-authenticate']
  if (challenge === undefined || !challenge.startsWith('Bearer') || challenge.includes('resource_metadata=')) return error
  const algs = request === undefined ? undefined : dpopAlgsOf(request)
  const scheme = algs === undefined ? challenge : `DPoP${challenge.slice('Bearer'.length)}, ${algs}`
  return error.with({
    headers: {
      ...error.headers,
      'www-authenticate': `${scheme}, resource_metadata="${metadataUrl}"`
    }
  })
}
