/** Memory bounds of a store; every queue has one. */
export interface StoreLimits {
  /** Resource subscriptions one connection may hold (default 1000). */
  maxSubscriptions: number
  /** Logical connections whose state is kept; the least recently used is forgotten first (default 10000). */
  maxConnections: number
  /** Undelivered notifications per connection; the oldest is dropped beyond (default 1000). */
  maxNotifications: number
  /** Notifications per group handed out by one `GET /notifications` (default 100). */
  notificationBatch: number
  /** Undelivered notifications older than this are dropped (default 1 hour). */
  notificationTtlMs: number
  /** Active plus pending server-to-client requests per connection (default 100). */
  maxRequests: number
  /** When the request queue is full: refuse the new request (default) or drop the oldest active one. */
  discardOldestRequests: boolean
  /** A pending request not answered within this goes back to active, same id (default 30 s). */
  redeliveryMs: number
  /** Sessions expire after this long unused (default 1 hour). */
  sessionTtlMs: number
  /** Tasks kept at once (all owners); beyond it, creating one is refused (default 10000). */
  maxTasks: number
  /** Idempotency records (claims and outcomes of retried tool calls) kept at once, all owners (default 10000). */
  maxIdempotencyRecords: number
}

export const DEFAULT_LIMITS: StoreLimits = {
  maxSubscriptions: 1000,
  maxConnections: 10_000,
  maxNotifications: 1000,
  notificationBatch: 100,
  notificationTtlMs: 3_600_000,
  maxRequests: 100,
  discardOldestRequests: false,
  redeliveryMs: 30_000,
  sessionTtlMs: 3_600_000,
  maxTasks: 10_000,
  maxIdempotencyRecords: 10_000
}
