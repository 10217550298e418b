import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { McpError, errors } from '../errors.js'
import type { Store } from '../store/types.js'
import { sendError, toMcpError } from './error-reply.js'

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
      if (request.routeOptions.config.mcpLiveness !== true) throw errors.overloaded(retryAfter)
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
        // The store's own failures are for the log; a check an app adds to its store's ping (a
        // gateway's upstream) throws an McpError whose words say why, for whoever reads /ready.
        const cause = err instanceof McpError ? err.message : undefined
        request.log.warn({ err }, `not ready: ${cause ?? 'the store does not answer'}`)
        throw errors.notReady(5, cause)
      } finally {
        clearTimeout(timer)
      }
      return { status: 'ready' }
    })
  }
}
