import type { StateKey } from '../mrtr/seal.js'
import type { Store } from '../store/types.js'
import type { CacheHints } from './results.js'

export interface McpServerOptions {
  /** `serverInfo` of `/initialize` and `/discover`. */
  name: string
  version: string
  title?: string
  description?: string
  /** Guidance for the model on how to use this server. */
  instructions?: string
  /** Items per page of every list (default 100). */
  pageSize?: number
  /** Cache hints of lists, reads and discover in 2026-07-28 (default `{ ttlMs: 0, cacheScope: 'private' }`). */
  cacheHints?: Partial<CacheHints>
  /**
   * Keys that seal `requestState` (`kid:base64url-32-bytes,...`, the first seals; or parsed keys).
   * Every instance behind one load balancer needs the same ring. Default: an ephemeral key.
   */
  stateKeys?: string | readonly StateKey[]
  /** How long a client has to answer before its `requestState` expires (default 15 minutes). */
  stateTtlMs?: number
  /** Largest `requestState` accepted, in bytes (default 32 KiB). */
  maxStateBytes?: number
  /** Shared state: connections, queues, subscriptions (default: an in-memory {@link MemoryStore}). */
  store?: Store
  /** How long a legacy-era question waits on `/requests` for the client's answer (default 5 minutes). */
  answerTimeoutMs?: number
  /**
   * How long a running task's instance vouches for it between renewals (every third of it; default
   * 60 s): a task still running a lease after its instance died is reported failed. Far longer than
   * the instances' clock skew, and than a store outage you want tasks to outlive.
   */
  taskLeaseMs?: number
  /** The time a request may take before long work should return a resumable part (`ctx.deadline`; default 30 s). */
  maxRequestMs?: number
}
