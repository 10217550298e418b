/**
 * What a store refuses, in the store's own terms: a limit reached, an answer that did not come. The
 * protocol core maps these to wire errors in one place (see `wireErrorOf` in src/errors.ts); a
 * store never speaks JSON-RPC codes or HTTP statuses.
 */
export class StoreError extends Error {
  override readonly name: string = 'StoreError'
  constructor(
    /** Stable name, for logs and tests. */
    readonly code: StoreErrorCode,
    message: string
  ) {
    super(message)
  }
}

export type StoreErrorCode =
  | 'ERR_STORE_QUEUE_FULL'
  | 'ERR_STORE_TOO_MANY_SUBSCRIPTIONS'
  | 'ERR_STORE_TOO_MANY_TASKS'
  | 'ERR_STORE_NOT_REPLICATED'
  | 'ERR_STORE_FULL'
  | 'ERR_STORE_QUOTA'
  | 'ERR_STORE_UNAVAILABLE'
  | 'ERR_STORE_FAILED'

/** A limit of the store was reached. */
export class StoreLimitError extends StoreError {
  override readonly name: string = 'StoreLimitError'
  constructor(
    code: StoreErrorCode,
    message: string,
    /** The limit that was reached. */
    readonly limit: number,
    /**
     * When space is certain to free (ms from now): the earliest expiry of what fills it. Absent when
     * the store cannot know (a queue emptied only by the client).
     */
    readonly retryAfterMs?: number
  ) {
    super(code, message)
  }
}

/**
 * The store as a whole holds as much of something as it may (all principals together): the server
 * is full, not the client at fault (503 with `Retry-After`: {@link StoreLimitError.retryAfterMs}).
 */
export class StoreFull extends StoreLimitError {
  override readonly name = 'StoreFull'
  constructor(what: string, limit: number, retryAfterMs: number) {
    super('ERR_STORE_FULL', `The server holds as many ${what} as it may (${limit}): retry later`, limit, retryAfterMs)
  }
}

/**
 * One principal holds its whole share of something (its quota), so that it cannot fill what others
 * need: 429 with `Retry-After` ({@link StoreLimitError.retryAfterMs}).
 */
export class QuotaExceeded extends StoreLimitError {
  override readonly name = 'QuotaExceeded'
  constructor(what: string, limit: number, retryAfterMs: number) {
    super('ERR_STORE_QUOTA', `This client holds as many ${what} as it may (${limit}): retry later`, limit, retryAfterMs)
  }
}

/**
 * The store did not answer (down, unreachable, too slow, out of memory): 503 with `Retry-After`, in
 * our words. What the driver said is kept as `cause`, for the log only.
 */
export class StoreUnavailable extends StoreError {
  override readonly name = 'StoreUnavailable'
  constructor(cause?: unknown) {
    super('ERR_STORE_UNAVAILABLE', 'The server\'s store is not answering: retry shortly')
    if (cause !== undefined) this.cause = cause
  }
}

/** A write was made but not confirmed by the replicas it must reach (`waitReplicas`): try again shortly. */
export class NotReplicated extends StoreError {
  override readonly name = 'NotReplicated'
  constructor(message: string) {
    super('ERR_STORE_NOT_REPLICATED', message)
  }
}

/** The request queue of a connection is full (SEP-1612: reject new requests with a clear error). */
export class QueueFull extends StoreLimitError {
  override readonly name = 'QueueFull'
  constructor(limit: number, unit: 'waiting' | 'bytes waiting' = 'waiting') {
    super('ERR_STORE_QUEUE_FULL', `The client's request queue is full (${limit} ${unit}): the client is not answering`, limit)
  }
}

/** A connection holds as many resource subscriptions as it may: a quota, which waiting does not lift. */
export class TooManySubscriptions extends StoreLimitError {
  override readonly name = 'TooManySubscriptions'
  constructor(limit: number) {
    super('ERR_STORE_TOO_MANY_SUBSCRIPTIONS', `Too many subscriptions (limit ${limit}): unsubscribe first`, limit)
  }
}

/** As many tasks run at once as the store allows (all principals; finished ones do not count). */
export class TooManyTasks extends StoreLimitError {
  override readonly name = 'TooManyTasks'
  constructor(limit: number, retryAfterMs: number) {
    super('ERR_STORE_TOO_MANY_TASKS', `Too many tasks in progress (${limit})`, limit, retryAfterMs)
  }
}

/** The client did not answer a server-to-client request in time. */
export class AnswerTimeout extends Error {
  override readonly name = 'AnswerTimeout'
}

/**
 * The answer a request discarded from a full queue gets (`discardOldestRequests`): its waiting
 * handler is told, in the JSON-RPC error form every answer record has (-32603, internal error).
 */
export const DISCARDED = { error: { code: -32603, message: 'Discarded: the request queue was full' } } as const
