import type { FastifyReply, FastifyRequest } from 'fastify'
import type { JWTPayload } from 'jose'
import type { Principal } from '../core/request-context.js'
import { errors, type McpError } from '../errors.js'
import { MemoryOnce } from '../store/memory-once.js'
import { DEFAULT_LIMITS } from '../store/limits.js'
import { DpopRefusal, dpopChecker, type DpopOptions } from './dpop.js'
import { BEARER, BEARER_SCHEME, DPOP, DPOP_SCHEME, DUPLICATE, takeHeader } from './take-header.js'

type Scheme = 'Bearer' | 'DPoP'

// The requests authenticated with a DPoP proof, and the `algs` of their challenges: a later
// challenge (the core's 403 insufficient_scope) is then in the DPoP scheme (RFC 9449 section 7.1).
const DPOP_REQUESTS = new WeakMap<FastifyRequest, string>()

/** The `algs="..."` of a request authenticated with a DPoP proof; undefined for any other. */
export function dpopAlgsOf(request: FastifyRequest): string | undefined {
  return DPOP_REQUESTS.get(request)
}

type Refuse = (message: string, error?: string, scheme?: Scheme) => McpError

/** What `bearerAuth` lends the DPoP scheme: its challenge's metadata, API keys, token verification. */
export interface SchemeParts {
  /** `, resource_metadata="..."`, or empty. */
  metadata: string
  keys: ((token: string) => Principal | undefined) | undefined
  /** The verified claims of an access token, or the refusal (`refuse` shapes it). */
  verified(token: string, request: FastifyRequest, refuse: Refuse): Promise<JWTPayload>
  principalOf(payload: JWTPayload): Principal
}

/**
 * The resource server with DPoP on: `Authorization: DPoP <token>` with one `DPoP` proof header
 * (RFC 9449 sections 4.3 and 7), and `Authorization: Bearer` for API keys and, unless DPoP is
 * required, unbound tokens. A bound token (`cnf.jkt`) as Bearer is refused. Challenges name both
 * schemes while both are accepted (RFC 9449 section 7.2); an error goes in the challenge of the
 * scheme it concerns. A nonce that rolled over is answered with a fresh `DPoP-Nonce`.
 */
export function dpopScheme(
  options: DpopOptions,
  audience: string,
  parts: SchemeParts
): (request: FastifyRequest, reply?: FastifyReply) => Promise<Principal> {
  const checker = dpopChecker(options, audience, options.replay ?? new MemoryOnce(DEFAULT_LIMITS.maxOnceKeys))
  const bearerAccepted = !checker.required || parts.keys !== undefined
  const algs = `algs="${checker.algorithms.join(' ')}"`
  const refuse: Refuse = (message, error, scheme = 'DPoP') => {
    // Without a Bearer challenge, every error is the DPoP scheme's.
    const on = (s: Scheme) => error !== undefined && (s === scheme || (s === 'DPoP' && !bearerAccepted))
    const dpop = `DPoP ${on('DPoP') ? `error="${error}", ` : ''}${algs}${parts.metadata}`
    const bearer = `Bearer realm="mcp"${on('Bearer') ? `, error="${error}"` : ''}${parts.metadata}`
    return errors.unauthorized(message, bearerAccepted ? `${bearer}, ${dpop}` : dpop)
  }
  const how = bearerAccepted ? '"Authorization: DPoP <token>" with a DPoP proof header, or "Authorization: Bearer <token>"' : '"Authorization: DPoP <token>" with a DPoP proof header'

  return async (request, reply) => {
    const header = takeHeader(request, 'authorization')
    const proof = takeHeader(request, 'dpop')
    if (header === undefined) throw refuse(`Authorization required: send ${how}`)
    if (header === DUPLICATE) throw refuse('Send one Authorization header, not several', 'invalid_request')
    const bearer = BEARER.exec(header)
    if (bearer !== null) {
      const token = bearer[1]!
      const key = parts.keys?.(token)
      if (key !== undefined) return key
      if (checker.required) {
        request.log.info({ reason: 'bearer token where DPoP is required' }, 'access token rejected')
        throw refuse('This server requires DPoP-bound access tokens: send "Authorization: DPoP <token>" with a DPoP proof header', 'invalid_token', 'Bearer')
      }
      const payload = await parts.verified(token, request, (m, e) => refuse(m, e, 'Bearer'))
      if ((payload.cnf as { jkt?: unknown } | undefined)?.jkt !== undefined) {
        request.log.info({ reason: 'bound token as bearer' }, 'access token rejected')
        throw refuse('This access token is DPoP-bound: send it as "Authorization: DPoP <token>" with a DPoP proof header', 'invalid_token', 'Bearer')
      }
      return parts.principalOf(payload)
    }
    const dpop = DPOP.exec(header)
    if (dpop === null) {
      if (DPOP_SCHEME.test(header)) throw refuse('Malformed Authorization header: expected "DPoP <token>"', 'invalid_request')
      if (BEARER_SCHEME.test(header)) throw refuse('Malformed Authorization header: expected "Bearer <token>"', 'invalid_request', 'Bearer')
      throw refuse(`Authorization required: only the ${bearerAccepted ? 'DPoP and Bearer schemes are' : 'DPoP scheme is'} supported`)
    }
    const token = dpop[1]!
    try {
      if (proof === undefined) throw new DpopRefusal('invalid_dpop_proof', 'A DPoP proof is required: send one DPoP header with the request', 'no proof')
      if (proof === DUPLICATE) throw new DpopRefusal('invalid_dpop_proof', 'Send one DPoP header, not several', 'several proofs')
      const checked = await checker.check(proof, token, request)
      const payload = await parts.verified(token, request, (m, e) => refuse(m, e))
      await checker.bind(payload, checked)
      if (checked.freshNonce !== undefined) reply?.header('dpop-nonce', checked.freshNonce)
      DPOP_REQUESTS.set(request, algs)
      return parts.principalOf(payload)
    } catch (err) {
      if (!(err instanceof DpopRefusal)) throw err
      request.log.info({ reason: err.reason }, 'DPoP proof rejected')
      const refusal = refuse(err.message, err.kind)
      throw err.nonce === undefined ? refusal : refusal.with({ headers: { ...refusal.headers, 'dpop-nonce': err.nonce } })
    }
  }
}
