import { Type, type Static } from '@sinclair/typebox'

/**
 * Memory bounds of a store; every queue has one, by count and by bytes (a record's bytes are its
 * JSON text plus {@link RECORD_OVERHEAD}). What one client can fill has a per-principal share too
 * (`...PerPrincipal`), so that it cannot take what others need: beyond its share a client gets 429,
 * beyond the store's bound everyone gets 503, both with a `Retry-After` of when space frees.
 */
export interface StoreLimits {
  /** Resource subscriptions one connection may hold (default 1000). */
  maxSubscriptions: number
  /** Logical connections whose state is kept; the least recently used is forgotten first (default 10000). */
  maxConnections: number
  /** Undelivered notifications per connection; the oldest is dropped beyond (default 1000). */
  maxNotifications: number
  /** Bytes of undelivered notifications per connection; the oldest are dropped beyond (default 1 MiB). */
  maxNotificationBytes: number
  /**
   * Bytes of undelivered notifications, all connections (in-memory store; default 256 MiB). Beyond,
   * the connections holding the most lose their oldest, down to 90% of this: a client that never
   * polls cannot make others lose theirs. Redis bounds the same with its `maxmemory`.
   */
  maxNotificationBytesTotal: number
  /** Notifications per group handed out by one `GET /notifications` (default 100). */
  notificationBatch: number
  /** Undelivered notifications older than this are dropped (default 1 hour). */
  notificationTtlMs: number
  /** Active plus pending server-to-client requests per connection (default 100). */
  maxRequests: number
  /** Bytes of active plus pending server-to-client requests per connection (default 1 MiB). */
  maxRequestBytes: number
  /** When the request queue is full: refuse the new request (default) or drop the oldest active one. */
  discardOldestRequests: boolean
  /** A pending request not answered within this goes back to active, same id (default 30 s). */
  redeliveryMs: number
  /** Sessions expire after this long unused (default 1 hour). */
  sessionTtlMs: number
  /** Tasks running (not yet finished) at once, all owners; beyond, creating one is refused (default 10000). */
  maxTasks: number
  /** Tasks one principal may have running at once (default 100). */
  maxTasksPerPrincipal: number
  /** Bytes of every task kept, finished ones with their results, all owners (default 64 MiB). */
  maxTaskBytes: number
  /** Bytes of the tasks one principal has kept (default 8 MiB). */
  maxTaskBytesPerPrincipal: number
  /** Idempotency records (claims and outcomes of retried tool calls) kept at once, all owners (default 10000). */
  maxIdempotencyRecords: number
  /** Bytes of idempotency records (replayed answers), all owners (default 64 MiB). */
  maxIdempotencyBytes: number
  /** Idempotency records of one principal (default 1000). */
  maxIdempotencyRecordsPerPrincipal: number
  /** Bytes of one principal's idempotency records (default 8 MiB). */
  maxIdempotencyBytesPerPrincipal: number
  /**
   * Single-use keys remembered at once (DPoP proof ids until their `iat` window closes), in-memory
   * store (default 100000); beyond, a new one is refused (503) rather than an unexpired one forgotten.
   * Redis bounds the same with its `maxmemory`.
   */
  maxOnceKeys: number
}

/** What a stored record costs beyond its text (keys, index entries, bookkeeping): counted in its bytes. */
export const RECORD_OVERHEAD = 256

const MiB = 1024 * 1024

export const DEFAULT_LIMITS: StoreLimits = {
  maxSubscriptions: 1000,
  maxConnections: 10_000,
  maxNotifications: 1000,
  maxNotificationBytes: MiB,
  maxNotificationBytesTotal: 256 * MiB,
  notificationBatch: 100,
  notificationTtlMs: 3_600_000,
  maxRequests: 100,
  maxRequestBytes: MiB,
  discardOldestRequests: false,
  redeliveryMs: 30_000,
  sessionTtlMs: 3_600_000,
  maxTasks: 10_000,
  maxTasksPerPrincipal: 100,
  maxTaskBytes: 64 * MiB,
  maxTaskBytesPerPrincipal: 8 * MiB,
  maxIdempotencyRecords: 10_000,
  maxIdempotencyBytes: 64 * MiB,
  maxIdempotencyRecordsPerPrincipal: 1000,
  maxIdempotencyBytesPerPrincipal: 8 * MiB,
  maxOnceKeys: 100_000
}

const Int = (min: number, def: number, description: string) =>
  Type.Integer({ minimum: min, maximum: Number.MAX_SAFE_INTEGER, default: def, description })
const D = DEFAULT_LIMITS

/** The `MCP_STORE_*` variables, part of the server's ConfigSchema (src/config.ts); see docs/deployment.md. */
export const StoreLimitsConfig = {
  MCP_STORE_MAX_CONNECTIONS: Int(1, D.maxConnections, 'Logical connections (and sessions) whose state is kept; the least recently used is forgotten.'),
  MCP_STORE_MAX_NOTIFICATIONS: Int(1, D.maxNotifications, 'Undelivered notifications per connection; the oldest is dropped beyond.'),
  MCP_STORE_MAX_NOTIFICATION_BYTES: Int(1024, D.maxNotificationBytes, 'Bytes of undelivered notifications per connection; the oldest are dropped beyond.'),
  MCP_STORE_MAX_NOTIFICATION_BYTES_TOTAL: Int(1024, D.maxNotificationBytesTotal, 'Bytes of undelivered notifications, all connections (in-memory store): beyond, the connections holding the most lose their oldest.'),
  MCP_STORE_MAX_REQUESTS: Int(1, D.maxRequests, 'Server-to-client requests waiting per connection (503 beyond).'),
  MCP_STORE_MAX_REQUEST_BYTES: Int(1024, D.maxRequestBytes, 'Bytes of server-to-client requests waiting per connection (503 beyond).'),
  MCP_STORE_MAX_TASKS: Int(1, D.maxTasks, 'Tasks running at once, all principals (503 beyond).'),
  MCP_STORE_MAX_TASKS_PER_PRINCIPAL: Int(1, D.maxTasksPerPrincipal, 'Tasks running at once per principal (429 beyond).'),
  MCP_STORE_MAX_TASK_BYTES: Int(1024, D.maxTaskBytes, 'Bytes of tasks kept, results included, all principals (503 beyond).'),
  MCP_STORE_MAX_TASK_BYTES_PER_PRINCIPAL: Int(1024, D.maxTaskBytesPerPrincipal, 'Bytes of tasks kept per principal (429 beyond).'),
  MCP_STORE_MAX_REPLAYS: Int(1, D.maxIdempotencyRecords, 'Replay records of tool calls with an Mcp-Request-Id, all principals (503 beyond).'),
  MCP_STORE_MAX_REPLAY_BYTES: Int(1024, D.maxIdempotencyBytes, 'Bytes of replay records, all principals (503 beyond).'),
  MCP_STORE_MAX_REPLAYS_PER_PRINCIPAL: Int(1, D.maxIdempotencyRecordsPerPrincipal, 'Replay records per principal (429 beyond).'),
  MCP_STORE_MAX_REPLAY_BYTES_PER_PRINCIPAL: Int(1024, D.maxIdempotencyBytesPerPrincipal, 'Bytes of replay records per principal (429 beyond).')
}

type Values = Partial<Static<ReturnType<typeof Type.Object<typeof StoreLimitsConfig>>>>

/** The store's limits from the `MCP_STORE_*` settings (those not set keep their defaults). */
export function limitsFromConfig(c: Values): Partial<StoreLimits> {
  const pick: [keyof Values, keyof StoreLimits][] = [
    ['MCP_STORE_MAX_CONNECTIONS', 'maxConnections'],
    ['MCP_STORE_MAX_NOTIFICATIONS', 'maxNotifications'],
    ['MCP_STORE_MAX_NOTIFICATION_BYTES', 'maxNotificationBytes'],
    ['MCP_STORE_MAX_NOTIFICATION_BYTES_TOTAL', 'maxNotificationBytesTotal'],
    ['MCP_STORE_MAX_REQUESTS', 'maxRequests'],
    ['MCP_STORE_MAX_REQUEST_BYTES', 'maxRequestBytes'],
    ['MCP_STORE_MAX_TASKS', 'maxTasks'],
    ['MCP_STORE_MAX_TASKS_PER_PRINCIPAL', 'maxTasksPerPrincipal'],
    ['MCP_STORE_MAX_TASK_BYTES', 'maxTaskBytes'],
    ['MCP_STORE_MAX_TASK_BYTES_PER_PRINCIPAL', 'maxTaskBytesPerPrincipal'],
    ['MCP_STORE_MAX_REPLAYS', 'maxIdempotencyRecords'],
    ['MCP_STORE_MAX_REPLAY_BYTES', 'maxIdempotencyBytes'],
    ['MCP_STORE_MAX_REPLAYS_PER_PRINCIPAL', 'maxIdempotencyRecordsPerPrincipal'],
    ['MCP_STORE_MAX_REPLAY_BYTES_PER_PRINCIPAL', 'maxIdempotencyBytesPerPrincipal']
  ]
  const out: Record<string, number> = {}
  for (const [env, limit] of pick) if (c[env] !== undefined) out[limit] = c[env]
  return out as Partial<StoreLimits>
}

/** Whole ms from `now` until `at`, at least 1 (a Retry-After is never "now"). */
export const msUntil = (at: number, now: number): number => Math.max(1, at - now)
