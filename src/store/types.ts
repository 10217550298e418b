import type { LoggingLevel } from '../schema/lifecycle.js'

/** What a legacy-era client said in `initialize`, kept for its logical connection. */
export interface LegacyClient {
  protocolVersion: string
  capabilities: Record<string, unknown>
  clientInfo: { name: string; version: string }
}

/** A message the server sends the client: `{ method, params }` without the JSON-RPC envelope. */
export interface ServerMessage {
  method: string
  params?: Record<string, unknown>
}

/** A batch of notifications handed out by `GET /notifications`, the same until acknowledged. */
export interface NotificationGroup {
  id: string
  notifications: ServerMessage[]
}

/** A server-to-client request on a connection's queue (SEP-1612 "active -> pending -> complete"). */
export interface QueuedRequest {
  id: string
  request: ServerMessage
  createdAt: number
  /** When it was last handed out by `POST /requests`; absent while active. */
  deliveredAt?: number
  deliveries: number
}

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled'
export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled'])

/** A task as stored (the Tasks extension's DetailedTask plus what the server keeps about it). */
export interface TaskRecord {
  taskId: string
  status: TaskStatus
  statusMessage?: string
  /** ISO 8601. */
  createdAt: string
  lastUpdatedAt: string
  ttlMs: number
  pollIntervalMs: number
  /** Outstanding server-to-client requests (status input_required), by key. */
  inputRequests?: Record<string, ServerMessage>
  /** The final result (completed), or the JSON-RPC error (failed). */
  result?: Record<string, unknown>
  error?: { code: number; message: string; data?: unknown }
  /** The client asked for notifications/tasks about this task. */
  notify?: boolean
}

/**
 * What {@link Store.beginIdempotent} found for a request id: `new` (claimed: run it), `in_progress`
 * (another attempt runs it now), `done` (its first outcome, to replay) or `conflict` (the id was used
 * for a different request).
 */
export type IdempotentStart =
  | { state: 'new' }
  | { state: 'in_progress' }
  | { state: 'done'; response: string }
  | { state: 'conflict' }

/** A client's answer to a queued request: its result, or a JSON-RPC error. */
export type ClientAnswer = { result: Record<string, unknown> } | { error: { code: number; message: string; data?: unknown } }

/**
 * State that outlives one request and must be shared by every instance. Every method that takes an
 * owner (the principal id of the logical connection) touches only that owner's state.
 * The in-memory implementation is the embedded default; a Redis one shares state between instances.
 */
export interface Store {
  /** The minimum level of `notifications/message` this connection receives (`POST /logLevel`). */
  setLogLevel(owner: string, level: LoggingLevel): Promise<void>
  getLogLevel(owner: string): Promise<LoggingLevel | undefined>
  /** Subscribe the connection to a resource URI. Resolves false when it already was. */
  subscribe(owner: string, uri: string): Promise<boolean>
  /** Resolves false when the connection was not subscribed. */
  unsubscribe(owner: string, uri: string): Promise<boolean>
  subscriptions(owner: string): Promise<string[]>
  /** The connections subscribed to a URI. */
  subscribers(uri: string): Promise<string[]>
  /** Remember (or read) the legacy-era `initialize` of a connection. */
  setLegacyClient(owner: string, client: LegacyClient): Promise<void>
  getLegacyClient(owner: string): Promise<LegacyClient | undefined>

  /** Queue a notification for one connection; beyond the limit the oldest undelivered one is dropped. */
  pushNotification(owner: string, notification: ServerMessage): Promise<void>
  /** Queue a notification for every connection that exists now (list_changed). */
  broadcast(notification: ServerMessage): Promise<void>
  /**
   * The connection's current group: the unacknowledged one if any, else a new one made of what is
   * queued (up to the batch size), else undefined.
   */
  takeNotifications(owner: string): Promise<NotificationGroup | undefined>
  /** Acknowledge a group: true when it was the current one (or the one acknowledged last). */
  ackNotifications(owner: string, groupId: string): Promise<boolean>

  /** Queue a server-to-client request; throws 429-style {@link QueueFull} when the queue is full. */
  enqueueRequest(owner: string, id: string, request: ServerMessage): Promise<void>
  /** Hand out the oldest active request (a pending one past its timeout is active again), or undefined. */
  claimRequest(owner: string): Promise<QueuedRequest | undefined>
  /** A queued request that is not yet complete. */
  getRequest(owner: string, id: string): Promise<QueuedRequest | undefined>
  /** Record the client's answer and wake whoever waits for it; false when unknown or already complete. */
  completeRequest(owner: string, id: string, answer: ClientAnswer): Promise<boolean>
  /**
   * Wait for the answer to a queued request (on any instance). Rejects with the signal's reason
   * when it aborts, and with a timeout error after `timeoutMs`; the request is then withdrawn.
   */
  awaitAnswer(owner: string, id: string, signal: AbortSignal, timeoutMs: number): Promise<ClientAnswer>

  /** Ask every instance to abort the in-flight request `requestId` of `owner` (notifications/cancelled). */
  publishCancel(owner: string, requestId: string, reason: string | undefined): Promise<void>
  /** Hear cancellations; returns the unsubscribe function. */
  onCancel(listener: (owner: string, requestId: string, reason: string | undefined) => void): () => void

  /** Tell every instance that the resource `uri` changed (for their `subscriptions/listen` streams). */
  publishResourceUpdated(uri: string): Promise<void>
  /** Hear resource changes published by any instance; returns the unsubscribe function. */
  onResourceUpdated(listener: (uri: string) => void): () => void

  /**
   * Store a new task; resolves only once a `getTask` on any instance would find it (the Tasks
   * extension requires it before the 202). Expires `ttlMs` after creation.
   */
  createTask(owner: string, task: TaskRecord): Promise<void>
  /** The task, or undefined when unknown, expired or another owner's. */
  getTask(owner: string, taskId: string): Promise<TaskRecord | undefined>
  /**
   * Change a task and stamp `lastUpdatedAt`. A terminal task stays as it is (resolves undefined): a
   * cancelled task cannot complete, a completed one cannot be cancelled.
   */
  updateTask(owner: string, taskId: string, patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>): Promise<TaskRecord | undefined>
  /**
   * Record answers for the task's outstanding input requests (other keys are ignored) and wake its
   * runner, on whatever instance. Keys answered leave `inputRequests`; when none remain the status
   * is `working` again. Resolves the keys taken, or undefined when the task is unknown.
   */
  answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined>
  /** Wait until every key is answered; resolves the answers (taken: each is handed out once). */
  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>>

  /**
   * Claim `requestId` of `owner` for one run (a retried `tools/call` with the same `Mcp-Request-Id`).
   * `digest` identifies the request's content: the same id with another digest is a `conflict`. The
   * claim lapses after `leaseMs` unless renewed, so that a retry after an instance failure runs again.
   * At most `maxIdempotencyRecords` claims and outcomes are kept; beyond, the one expiring first goes.
   * @example
   * const start = await store.beginIdempotent(owner, 'call-1', digest, 30_000)
   * if (start.state === 'new') await store.finishIdempotent(owner, 'call-1', JSON.stringify(result), 600_000)
   */
  beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart>
  /** Extend a running claim by `leaseMs`; false when it is no longer running (finished, abandoned, lapsed). */
  renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean>
  /** Record the outcome of a claimed run; `beginIdempotent` replays it (`done`) for `ttlMs`. */
  finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void>
  /** Forget a claim whose run failed, so that a retry runs again. */
  abandonIdempotent(owner: string, requestId: string): Promise<void>

  /** Resolves when the store can serve (readiness: `GET /ready`); rejects when it cannot. */
  ping(): Promise<void>

  /** Issue a session id (Mcp-Session-Id) and check one. */
  createSession(): Promise<string>
  hasSession(id: string): Promise<boolean>

  close(): Promise<void>
}

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
