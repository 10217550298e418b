import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { errors } from '../errors.js'
import { limitKey } from './rate-limit.js'

export interface StreamLimits {
  /** Streams one client (principal, or address when anonymous) may hold open at once on this instance (default 100). */
  maxPerPrincipal?: number
  /** Streams open at once on this instance, all clients (default 10 000). */
  max?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The open-stream slots of these routes (see {@link StreamSlots}). */
    mcpStreams: StreamSlots
  }
}

// A slot frees when one of the client's streams ends, which no one can foresee: the same guess as
// a store queue that the client empties (see errors.ts).
const RETRY_AFTER = '5'

/**
 * Bounds on long-lived responses (SSE streams of either face): each holds a socket, buffers and a
 * handler's state for as long as the client keeps it, so that one token could otherwise pin an
 * instance's memory with idle streams. Counted in this process, not in the store: a stream is a
 * socket of this instance, and a count in Redis would outlive an instance that died. A client spread
 * over N instances may hold N times its share.
 */
export class StreamSlots {
  readonly #open = new Map<string, number>()
  #total = 0
  readonly maxPerPrincipal: number
  readonly max: number

  constructor(limits: StreamLimits = {}) {
    this.maxPerPrincipal = limits.maxPerPrincipal ?? 100
    this.max = limits.max ?? 10_000
  }

  /** Streams open now on this instance, all clients. */
  get open(): number {
    return this.#total
  }

  /**
   * Hold a slot for this response until it ends, however it ends (result, error, the client leaving,
   * the server closing it). Beyond the client's share: 429; beyond the instance's bound: 503; both
   * with `Retry-After`, before anything runs.
   */
  take(request: FastifyRequest, reply: FastifyReply): void {
    const res = reply.raw
    // A client that already left holds nothing, and its 'close' has passed.
    if (res.destroyed) return
    const key = limitKey(request)
    const held = this.#open.get(key) ?? 0
    if (held >= this.maxPerPrincipal) {
      throw errors.tooManyStreams(this.maxPerPrincipal, RETRY_AFTER)
    }
    if (this.#total >= this.max) {
      throw errors.streamsFull(RETRY_AFTER)
    }
    this.#open.set(key, held + 1)
    this.#total++
    res.once('close', () => {
      this.#total--
      const left = this.#open.get(key)! - 1
      if (left === 0) this.#open.delete(key)
      else this.#open.set(key, left)
    })
  }
}

/** Decorates the MCP routes with their {@link StreamSlots}; the faces take one before they stream. */
const streamSlots: FastifyPluginAsync<StreamLimits> = async (fastify, limits) => {
  fastify.decorate('mcpStreams', new StreamSlots(limits))
}

export default fp(streamSlots, {
  name: 'mcp-stream-slots',
  fastify: '5.x',
  // Reads request.mcpState (the request id, version and principal), which admission sets.
  dependencies: ['mcp-admission']
})
