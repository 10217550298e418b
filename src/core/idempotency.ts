import { errors } from '../errors.js'
import type { IdempotencyStore } from '../store/types.js'

export interface IdempotencyOptions {
  /** How long a first outcome is replayed (ms); 0 turns deduplication off. */
  ttlMs: number
  /** How long a running claim lasts without renewal (ms): a retry after an instance failure waits at most this long. */
  leaseMs: number
}

/** A claimed first run: record what it answered, or give the id back. Either stops the lease's renewal. */
export interface Claim {
  /** Keep `outcome` (the face's own text of the answer) for retries to replay. */
  finish(outcome: string): Promise<void>
  /** Forget the claim (an error, or a client that left before its answer): a retry runs again. */
  abandon(): Promise<void>
  /** Stop renewing the lease (the response is over); the claim then lapses unless recorded. */
  stop(): void
}

/** What a request with a key gets: the first run, or the outcome of one that finished. */
export type Begun = { readonly state: 'new'; readonly claim: Claim } | { readonly state: 'done'; readonly outcome: string }

/**
 * Identity of a message (BINDING.md): a `tools/call` retried with the same `Mcp-Request-Id` by the
 * same principal runs once, and the retry gets the first outcome. One step for both faces: each
 * decides which requests carry a key, what makes two requests the same (`digest`), and what text it
 * keeps and replays; the claim, its lease and the two refusals are here. While the first run goes
 * on, 409 with `Retry-After: 1`; the same key for another request, 409.
 */
export class IdempotentCalls {
  constructor(
    readonly store: IdempotencyStore,
    readonly options: IdempotencyOptions
  ) {}

  get enabled(): boolean {
    return this.options.ttlMs > 0
  }

  /**
   * Claim `key` of `owner` for this request, or learn what a retry gets. `warn` hears a lease that
   * could not be renewed (the store is down: a retry may then run it again after the lease).
   */
  async begin(owner: string, key: string, digest: string, warn: (err: unknown) => void): Promise<Begun> {
    const { store, options } = this
    const { leaseMs, ttlMs } = options
    const start = await store.beginIdempotent(owner, key, digest, leaseMs)
    switch (start.state) {
      case 'new': {
        const renew = setInterval(() => {
          store.renewIdempotent(owner, key, leaseMs).catch(warn)
        }, leaseMs / 3).unref()
        const stop = () => clearInterval(renew)
        return {
          state: 'new',
          claim: {
            finish: (outcome) => {
              stop()
              return store.finishIdempotent(owner, key, outcome, ttlMs)
            },
            abandon: () => {
              stop()
              return store.abandonIdempotent(owner, key)
            },
            stop
          }
        }
      }
      case 'done':
        return { state: 'done', outcome: start.response }
      case 'in_progress':
        throw errors.callRunning(key)
      case 'conflict':
        throw errors.callMismatch(key)
    }
  }
}
