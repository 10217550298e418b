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
  /** The notifications as a JSON array, when the store keeps them serialized: sent as they are. */
  readonly json?: string
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
  /**
   * Until when (ms since the epoch) the instance running it vouches that it is alive: it renews the
   * lease while the work runs (`TaskStore.renewTask`). A task still running past it lost its instance
   * and is reported failed. Absent: no lease (never lapses). Store-only, like `notify`.
   */
  leaseUntil?: number
  /**
   * The task ended and its creator asked for notifications, but notifications/tasks with that end is
   * not yet known to be queued: set with the end (one write), cleared once it is queued
   * (`TaskStore.notifiedTask`). Meanwhile the lease still guards the task: an instance that dies
   * between the two writes leaves a lapsed lease, and another instance queues the notification.
   * Store-only.
   */
  notifyPending?: boolean
}

/**
 * What {@link IdempotencyStore.beginIdempotent} found for a request id: `new` (claimed: run it), `in_progress`
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
