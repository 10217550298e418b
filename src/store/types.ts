import type { LoggingLevel } from '../schema/lifecycle.js'
import type { MaybePromise } from '../core/maybe-promise.js'
import type { RateLimitPluginOptions } from '@fastify/rate-limit'
import type { RoundRelay } from '../gateway/relay.js'
import type { WebhookStore } from '../webhooks/types.js'
import type { ClientAnswer, IdempotentStart, LegacyClient, NotificationGroup, QueuedRequest, ServerMessage, TaskRecord } from './records.js'

export * from './records.js'
export * from './limits.js'

/*
 * State that outlives one request and must be shared by every instance, as role interfaces: a caller
 * takes the role it needs (the task runner `store.tasks`, the idempotency plugin
 * `store.idempotency`), and a backend assembles a {@link Store} from one object per role
 * (MemoryStore, RedisStore). Every method that
 * takes an owner (the principal id of the logical connection) touches only that owner's state.
 * Stores raise the errors of ./errors.ts; the protocol core maps them to wire errors.
 */

/** A logical connection's settings: log level, resource subscriptions, legacy `initialize`, sessions. */
export interface ConnectionStore {
  /** The minimum level of `notifications/message` this connection receives (`POST /logLevel`). */
  setLogLevel(owner: string, level: LoggingLevel): Promise<void>
  getLogLevel(owner: string): Promise<LoggingLevel | undefined>
  /** The connections whose log level takes a message at `level` (a log message outside any request). */
  loggers(level: LoggingLevel): Promise<string[]>
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

  /** Issue a session id (Mcp-Session-Id) and check one. */
  createSession(): Promise<string>
  hasSession(id: string): Promise<boolean>
}

/** What waits for the client: notifications (in acknowledged groups) and server-to-client requests. */
export interface Mailbox {
  /** Queue a notification for one connection; beyond the limits (count, bytes) the oldest undelivered ones are dropped. */
  pushNotification(owner: string, notification: ServerMessage): Promise<void>
  /**
   * Queue a notification for every connection that exists now (list_changed), but those in `except`
   * (the webhooks took it for them).
   */
  broadcast(notification: ServerMessage, except?: ReadonlySet<string>): Promise<void>
  /**
   * The connection's current group: the unacknowledged one if any, else a new one made of what is
   * queued (up to the batch size), else undefined.
   */
  takeNotifications(owner: string): Promise<NotificationGroup | undefined>
  /** Acknowledge a group: true when it was the current one (or the one acknowledged last). */
  ackNotifications(owner: string, groupId: string): Promise<boolean>

  /** Queue a server-to-client request; throws {@link QueueFull} (see ./store-errors.ts) when the queue is full (count or bytes). */
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
}

/** Messages between instances: cancellation and resource changes (Redis pub/sub when shared). */
export interface Signals {
  /** Ask every instance to abort the in-flight request `requestId` of `owner` (notifications/cancelled). */
  publishCancel(owner: string, requestId: string, reason: string | undefined): Promise<void>
  /** Hear cancellations; returns the unsubscribe function. */
  onCancel(listener: (owner: string, requestId: string, reason: string | undefined) => void): () => void

  /** Tell every instance that the resource `uri` changed (for their `subscriptions/listen` streams). */
  publishResourceUpdated(uri: string): Promise<void>
  /** Hear resource changes published by any instance; returns the unsubscribe function. */
  onResourceUpdated(listener: (uri: string) => void): () => void
}

/** A task's wire form as text (see {@link TaskStore.getTaskText}). */
export interface TaskText {
  status: TaskRecord['status']
  /** The task's lease, when it has one (see {@link TaskRecord.leaseUntil}). */
  leaseUntil?: number
  /** See {@link TaskRecord.notifyPending}. */
  notifyPending?: boolean
  pollIntervalMs: number
  json: string
}

/** Tasks (the Tasks extension): records, their input requests and answers. */
export interface TaskStore {
  /**
   * Store a new task; resolves only once a `getTask` on any instance would find it (the Tasks
   * extension requires it before the 202). Expires `ttlMs` after creation. Running tasks are bounded
   * in all and per owner, tasks kept by bytes: beyond, {@link TooManyTasks}, {@link StoreFull} or
   * (the owner's share) {@link QuotaExceeded}, with when the first task that fills it expires.
   */
  createTask(owner: string, task: TaskRecord): Promise<void>
  /**
   * The task, or undefined when unknown, expired or another owner's. A store in this process may
   * answer at once (a value, not a promise): a poll then takes no turn of the microtask queue.
   */
  getTask(owner: string, taskId: string): MaybePromise<TaskRecord | undefined>
  /**
   * Optional: the task as tasks/get answers it (`{"resultType":"complete", ...}` without the
   * store-only fields), as JSON text built from what the store keeps serialized, with the two
   * fields a poll's headers need; undefined as {@link getTask}. A store that keeps JSON (Redis)
   * then neither decodes nor encodes a polled task.
   */
  getTaskText?(owner: string, taskId: string): Promise<TaskText | undefined>
  /**
   * Change a task and stamp `lastUpdatedAt`. A terminal task stays as it is (resolves undefined): a
   * cancelled task cannot complete, a completed one cannot be cancelled. A task that finishes with
   * an outcome beyond the byte bounds is `failed` with {@link TOO_LARGE} instead. A task that
   * finishes and whose creator asked for notifications is marked `notifyPending` in the same write.
   *
   * Resolves the task as it now is only when its creator asked for notifications (`notify`: the
   * notification carries it); any other change resolves `true`, and nothing is read back (a Redis
   * store would read the whole hash for every step of every task, to throw it away).
   */
  updateTask(owner: string, taskId: string, patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>): Promise<TaskRecord | true | undefined>
  /**
   * Record answers for the task's outstanding input requests (other keys are ignored) and wake its
   * runner, on whatever instance. Keys answered leave `inputRequests`; when none remain the status
   * is `working` again. Resolves the keys taken, or undefined when the task is unknown.
   */
  answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined>
  /**
   * Extend a task's lease (`leaseUntil`) without changing what clients see (`lastUpdatedAt` stays),
   * while it runs or its end's notification is pending. Resolves false when the task is unknown, or
   * finished and notified.
   */
  renewTask(owner: string, taskId: string, leaseUntil: number): Promise<boolean>
  /**
   * Take a task whose lease lapsed before `now` (running, or ended with its notification pending:
   * see {@link TaskRecord.notifyPending}) by giving it the lease `leaseUntil`: of the instances that
   * find it lapsed at once, one takes it. Resolves the task as it is when taken; undefined when it
   * is unknown, not lapsed, or nothing to guard.
   */
  takeLapsedTask(owner: string, taskId: string, now: number, leaseUntil: number): Promise<TaskRecord | undefined>
  /** The notification of the task's end is queued: clears `notifyPending` (nothing to guard any more). */
  notifiedTask(owner: string, taskId: string): Promise<void>
  /**
   * Up to `max` tasks, anyone's, that asked for notifications and whose lease may have lapsed before
   * `now` (candidates: {@link takeLapsedTask} decides), for the instances' sweep: a task whose
   * instance died is failed and notified without waiting for someone to read it.
   */
  lapsedTasks(now: number, max: number): Promise<{ owner: string; taskId: string }[]>
  /** Wait until every key is answered; resolves the answers (taken: each is handed out once). */
  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>>
}

/** Claims and outcomes of retried `tools/call`s (`Mcp-Request-Id`). */
export interface IdempotencyStore {
  /**
   * Claim `requestId` of `owner` for one run (a retried `tools/call` with the same `Mcp-Request-Id`).
   * `digest` identifies the request's content: the same id with another digest is a `conflict`. The
   * claim lapses after `leaseMs` unless renewed, so that a retry after an instance failure runs again.
   * Claims and outcomes are bounded by count and bytes, in all and per owner (`maxIdempotency*`):
   * none is ever evicted; beyond, the claim is refused with {@link QuotaExceeded} (the owner's share)
   * or {@link StoreFull}, each with when the first record expires.
   * @example
   * const start = await store.idempotency.beginIdempotent(owner, 'call-1', digest, 30_000)
   * if (start.state === 'new') await store.idempotency.finishIdempotent(owner, 'call-1', JSON.stringify(result), 600_000)
   */
  beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart>
  /** Extend a running claim by `leaseMs`; false when it is no longer running (finished, abandoned, lapsed). */
  renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean>
  /**
   * Record the outcome of a claimed run; `beginIdempotent` replays it (`done`) for `ttlMs`. An
   * outcome beyond the byte bounds is not kept (the claim goes too: a retry runs again).
   */
  finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void>
  /** Forget a claim whose run failed, so that a retry runs again. */
  abandonIdempotent(owner: string, requestId: string): Promise<void>
}

/**
 * Single-use keys shared by every instance: what refuses a replayed DPoP proof (RFC 9449 section
 * 11.1) whichever instance sees it first. A companion (see {@link StoreCompanions}): only a server
 * that checks DPoP proofs makes it.
 */
export interface OnceKeys {
  /**
   * Claim `key` for `ttlMs`: resolves true the first time, false while that claim lasts (on any
   * instance). A store that holds as many keys as it may refuses with {@link StoreFull} rather than
   * forget one early (a forgotten key is a replay let through).
   * @example
   * const onceKeys = await store.companions.onceKeys!()
   * if (!(await onceKeys.once('dpop:<jkt>:<jti>', 360_000))) throw new Error('a replayed proof')
   */
  once(key: string, ttlMs: number): Promise<boolean>
}

/** The role objects of a {@link Store}, by name. */
export interface StoreRoles {
  readonly connections: ConnectionStore
  readonly mailbox: Mailbox
  readonly signals: Signals
  readonly tasks: TaskStore
  readonly idempotency: IdempotencyStore
}

/** What `@fastify/rate-limit` needs to count in a backend (its `redis` + `nameSpace`, or its `store` class; `{}`: its own memory). */
export type RateLimitBackend = Pick<RateLimitPluginOptions, 'redis' | 'nameSpace' | 'store'>

/**
 * Features beside the core that keep state of their own and must keep it where the store keeps
 * its: the per-principal rate limits, webhooks and their pending deliveries, the gateway's round
 * relay between instances. Each is made when a feature that needs it starts. A backend that lacks
 * one makes that feature refuse to start with a {@link ConfigurationError}: nothing falls back to
 * this process' memory behind a shared store's back.
 */
export interface StoreCompanions {
  rateLimit?(): Promise<RateLimitBackend>
  onceKeys?(): Promise<OnceKeys>
  webhooks?(): Promise<WebhookStore>
  roundRelay?(): Promise<RoundRelay>
}

/**
 * The whole store: its role objects, assembled by a backend (there is no method of the store
 * itself that forwards to a role), its companions, readiness and shutdown. A caller takes the role
 * it needs: `store.tasks.createTask(owner, task)`. The in-memory implementation is the embedded
 * default; a Redis one shares state between instances. See docs/backends.md to add another.
 */
export interface Store extends StoreRoles {
  readonly companions: StoreCompanions
  /** Resolves when the store can serve (readiness: `GET /ready`); rejects when it cannot. */
  ping(): Promise<void>

  close(): Promise<void>
}
