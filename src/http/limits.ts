import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { ErrorCode, McpError, errors } from '../errors.js'
import { RedisStore } from '../store/redis.js'
import type { Store } from '../store/types.js'
import { sendError, toMcpError } from './errors.js'

export interface RateLimitOptions {
  /** Requests one principal may make per window. */
  max: number
  /** The window, in ms (default 60 000). */
  timeWindowMs?: number
}

/**
 * Per-principal rate limits on the MCP routes: an authenticated principal is one bucket, anonymous
 * callers one bucket per client IP (behind a proxy, set Fastify's `trustProxy`). With a
 * {@link RedisStore} the counters live in its Redis, so the limit holds across instances. Beyond it:
 * 429 -32600 with `Retry-After`.
 */
export async function rateLimits(fastify: FastifyInstance, store: Store, options: RateLimitOptions | undefined): Promise<void> {
  if (options === undefined || options.max <= 0) return
  const timeWindow = options.timeWindowMs ?? 60_000
  await fastify.register(rateLimit, {
    max: options.max,
    timeWindow,
    // After authentication (an onRequest hook): the principal is known.
    hook: 'preValidation',
    keyGenerator: (request) => {
      const p = request.mcpState.principal
      return p.anonymous ? `ip:${request.ip}` : `p:${p.id}`
    },
    ...(store instanceof RedisStore ? { redis: store.client, nameSpace: `${store.prefix}rl:` } : {}),
    errorResponseBuilder: (_request, context) =>
      new McpError(ErrorCode.invalidRequest, `Rate limit exceeded: at most ${context.max} requests in ${timeWindow / 1000} s; retry in ${context.after}`, 429, undefined, {
        'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000)))
      })
  })
}

export interface PressureOptions {
  /** Shed load while the event loop lags more than this (ms, mean over a second). */
  maxEventLoopDelayMs?: number
  /** Shed load while the V8 heap holds more than this many bytes. */
  maxHeapUsedBytes?: number
  /** Shed load while the process' resident set is larger than this many bytes. */
  maxRssBytes?: number
  /** `Retry-After` of the 503 (seconds, default 5). */
  retryAfterSec?: number
}

/**
 * Load shedding (`@fastify/under-pressure`): under pressure every route but `/health` answers 503
 * -32603 with `Retry-After`, before any work is done.
 */
export async function loadShedding(app: FastifyInstance, options: PressureOptions): Promise<void> {
  // No threshold set is no load shedding: not even the plugin's event-loop and memory sampling.
  if (!options.maxEventLoopDelayMs && !options.maxHeapUsedBytes && !options.maxRssBytes) return
  const retryAfter = options.retryAfterSec ?? 5
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs ?? 0,
    maxHeapUsedBytes: options.maxHeapUsedBytes ?? 0,
    maxRssBytes: options.maxRssBytes ?? 0,
    retryAfter,
    // A rejection goes to the route's error handler: the binding's error body, with Retry-After.
    pressureHandler: async (request) => {
      if (request.routeOptions.config.mcpLiveness !== true) throw errors.unavailable('The server is overloaded: retry later', retryAfter)
    }
  })
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `/health`: answers even under pressure (a busy process is alive). */
    mcpLiveness?: boolean
  }
}

/**
 * `GET /health` (liveness: the process answers) and `GET /ready` (readiness: the store answers a
 * ping within 2 s), outside the MCP routes: no authentication, no Host/Origin checks, no rate limit.
 */
export function probes(store: () => Store): FastifyPluginAsync {
  return async (fastify) => {
    fastify.setErrorHandler((err, request, reply) => sendError(reply, toMcpError(err, request)))
    fastify.get('/health', { config: { mcpLiveness: true }, schema: { hide: true } }, async () => ({ status: 'ok' }))
    fastify.get('/ready', { schema: { hide: true } }, async (request) => {
      let timer: NodeJS.Timeout | undefined
      try {
        await Promise.race([
          store().ping(),
          new Promise((_resolve, reject) => (timer = setTimeout(() => reject(new Error('no answer within 2 s')), 2000)))
        ])
      } catch (err) {
        request.log.warn({ err }, 'not ready: the store does not answer')
        throw errors.unavailable('Not ready: the store does not answer', 5)
      } finally {
        clearTimeout(timer)
      }
      return { status: 'ready' }
    })
  }
}
