import rateLimit from '@fastify/rate-limit'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { errors } from '../errors.js'
import { companion } from '../store/compose.js'
import type { Store } from '../store/types.js'

export interface RateLimitOptions {
  /** Requests one principal may make per window. */
  max: number
  /** The window, in ms (default 60 000). */
  timeWindowMs?: number
}

/**
 * Per-principal rate limits on the MCP routes: an authenticated principal is one bucket, anonymous
 * callers one bucket per client IP (behind a proxy, set Fastify's `trustProxy`). The counters live
 * where the store's `rateLimit` companion says (a RedisStore's Redis: the limit holds across
 * instances); a store without one refuses to start. Beyond it: 429 -32600 with `Retry-After`.
 */
const rateLimits: FastifyPluginAsync<{ store: Store; limits: RateLimitOptions | undefined }> = async (fastify, { store, limits: options }) => {
  if (options === undefined || options.max <= 0) return
  const timeWindow = options.timeWindowMs ?? 60_000
  await fastify.register(rateLimit, {
    max: options.max,
    timeWindow,
    // After authentication (an onRequest hook): the principal is known.
    hook: 'preValidation',
    keyGenerator: limitKey,
    ...(await companion(store, 'rateLimit', 'A rate limit')),
    errorResponseBuilder: (_request, context) =>
      errors.rateLimited(context.max, timeWindow / 1000, context.after, Math.max(1, Math.ceil(context.ttl / 1000)))
  })
}

/**
 * Whom a per-client limit counts a request against: an authenticated principal, else the client's
 * address (anonymous callers share one logical connection, or pick a session freely).
 */
export function limitKey(request: FastifyRequest): string {
  const p = request.mcpState.principal
  return p.anonymous ? `ip:${request.ip}` : `p:${p.id}`
}

export default fp(rateLimits, {
  name: 'mcp-rate-limits',
  fastify: '5.x',
  // Reads request.mcpState (the request id, version and principal), which admission sets.
  dependencies: ['mcp-admission']
})

/**
 * Rate limiting before authentication: an address whose requests were refused authentication `max`
 * times in a window is answered 429 without checking its next token, so random tokens (each a
 * signature check, perhaps a key-set fetch) cost little. Counted per instance, in memory, at most
 * 10 000 addresses a window (beyond that the window starts afresh). Authenticated calls still go
 * through the per-principal limit.
 */
export function authFailureLimit(options: RateLimitOptions | undefined, now: () => number = Date.now): {
  /** Throws the 429 when `ip` is over its limit. */
  check(ip: string): void
  /** Count one refused authentication of `ip`. */
  failed(ip: string): void
} | undefined {
  if (options === undefined || options.max <= 0) return undefined
  const { max } = options
  const windowMs = options.timeWindowMs ?? 60_000
  let counts = new Map<string, number>()
  let windowStart = now()
  const roll = (): void => {
    const t = now()
    if (t - windowStart >= windowMs || counts.size >= 10_000) {
      counts = new Map()
      windowStart = t
    }
  }
  return {
    check(ip) {
      roll()
      if ((counts.get(ip) ?? 0) < max) return
      const retry = Math.max(1, Math.ceil((windowStart + windowMs - now()) / 1000))
      throw errors.authRateLimited(max, windowMs / 1000, retry)
    },
    failed(ip) {
      counts.set(ip, (counts.get(ip) ?? 0) + 1)
    }
  }
}
