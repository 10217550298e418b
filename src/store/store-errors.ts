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

export type StoreErrorCode = 'ERR_STORE_QUEUE_FULL' | 'ERR_STORE_TOO_MANY_SUBSCRIPTIONS' | 'ERR_STORE_TOO_MANY_TASKS' | 'ERR_STORE_NOT_REPLICATED'

/** A limit of the store was reached. */
export class StoreLimitError extends StoreError {
  override readonly name: string = 'StoreLimitError'
  constructor(
    code: StoreErrorCode,
    message: string,
    /** The limit that was reached. */
    readonly limit: number
  ) {
    super(code, message)
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
  constructor(limit: number) {
    super('ERR_STORE_QUEUE_FULL', `The client's request queue is full (${limit} waiting): the client is not answering`, limit)
  }
}

/** A connection holds as many resource subscriptions as it may: a quota, which waiting does not lift. */
export class TooManySubscriptions extends StoreLimitError {
  override readonly name = 'TooManySubscriptions'
  constructor(limit: number) {
    super('ERR_STORE_TOO_MANY_SUBSCRIPTIONS', `Too many subscriptions (limit ${limit}): unsubscribe first`, limit)
  }
}

/** As many tasks are kept as the store may hold. */
export class TooManyTasks extends StoreLimitError {
  override readonly name = 'TooManyTasks'
  constructor(limit: number) {
    super('ERR_STORE_TOO_MANY_TASKS', `Too many tasks in progress (${limit})`, limit)
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
