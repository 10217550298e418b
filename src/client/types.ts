import type { DpopKey } from './dpop.js'
import type { CreateTaskResult, Task } from './results.js'

/** A JSON object as it travels: params, `_meta`, answers to the server's questions. */
export type Json = Record<string, any>

/** A server-to-client request: an MRTR or task `inputRequests` value, or one handed out by `POST /requests`. */
export interface InputRequest {
  method: string
  params?: Json
}

/** A root the client shares (`roots/list`). */
export interface ClientRoot {
  uri: string
  name?: string
}

/** What a handler is told besides the request: `signal` aborts when the call that asks is aborted. */
export interface HandlerContext {
  signal?: AbortSignal
}

/**
 * What the client answers when a server asks. Each handler present is declared as a capability
 * (`elicitation`, `sampling`, `roots`) in the `_meta` envelope (2026-07-28) or in `initialize`.
 */
export interface ClientHandlers {
  /** `elicitation/create`: return an `ElicitResult` (`{ action: 'accept', content }`, `{ action: 'decline' }`, ...). */
  elicit?: (params: Json, context: HandlerContext) => Json | Promise<Json>
  /** `sampling/createMessage`: return a `CreateMessageResult`. */
  sample?: (params: Json, context: HandlerContext) => Json | Promise<Json>
  /** `roots/list`: return the roots (the client wraps them as `{ roots }`). */
  listRoots?: (context: HandlerContext) => ClientRoot[] | Promise<ClientRoot[]>
}

export interface PureHttpClientOptions {
  /** The server's base URL, with its prefix if any (`http://127.0.0.1:3000`, `https://host/mcp`). */
  url: string | URL
  /** A bearer token, sent as `Authorization: Bearer <token>` (with `dpop`: `DPoP <token>`). */
  token?: string
  /**
   * A DPoP key pair (RFC 9449) that `token` is bound to: every request then carries
   * `Authorization: DPoP <token>` and a fresh `DPoP` proof, and a `use_dpop_nonce` 401 is retried
   * once with the server's nonce (remembered for later requests). See `dpopKeyFromJwk`.
   */
  dpop?: DpopKey
  /** Default `2026-07-28`. A legacy version (2025-06-18, 2025-11-25) needs `initialize()` first. */
  protocolVersion?: string
  /** Extra client capabilities, merged over the ones derived from the handlers and the tasks extension. */
  capabilities?: Json
  clientInfo?: { name: string; version: string }
  handlers?: ClientHandlers
  /** Retries of network errors, 503 and 429: `attempts` in all (default 3), backoff `baseMs * 2^n` (default 200). */
  retry?: { attempts?: number; baseMs?: number }
  /** Most MRTR rounds of one call before giving up (default 10). */
  maxRounds?: number
}

/**
 * What every call takes. Aborting `signal` aborts the HTTP request and any MRTR, resume or task
 * loop, and the call rejects with `signal.reason`. A tool call, prompt or read that was in flight is
 * cancelled on the server (`notifications/cancelled` naming its `Mcp-Request-Id`), a task through
 * `POST /tasks/{id}/cancel`; both are sent before the call rejects.
 *
 * @example
 * const stop = AbortSignal.timeout(5000)
 * await client.callTool('slow_compute', { n: 100 }, { signal: stop })
 */
export interface CallOptions {
  signal?: AbortSignal
  /** Extra `_meta` for the request (a `progressToken`, for one). */
  meta?: Json
}

export interface CallToolOptions extends CallOptions {
  /** Called with the task on creation and on every poll, when the call runs as a task. */
  onTask?: (task: Task | CreateTaskResult) => void
  /** The Tasks extension's request parameters (`{ ttl, notify }`), sent as the body's `task`. */
  task?: Json
  /** `false`: a call that becomes a task answers its `CreateTaskResult` (`resultType: 'task'`) instead of waiting for it. */
  wait?: boolean
}

export interface PollOptions {
  /** Each server notification, in order. A group is acknowledged once all of its notifications were delivered. */
  onNotification?: (notification: Json) => void | Promise<void>
  /** Stops the loop; `poll()` then resolves. */
  signal?: AbortSignal
  /** Pause between polls that found nothing (default 1000 ms). */
  intervalMs?: number
}

/** An error answer of the server (or the client's refusal to go on): JSON-RPC `code`, HTTP `status` (0 when none). */
export class McpHttpError extends Error {
  override readonly name = 'McpHttpError'
  constructor(
    message: string,
    readonly code: number,
    readonly status: number,
    readonly data?: unknown,
    readonly requestId?: string
  ) {
    super(message)
  }
}

/** Pause `ms`, or less when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve()
    const done = () => ((clearTimeout(timer), signal?.removeEventListener('abort', done), resolve()))
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}

/** The text of an abort reason (an `Error`'s message, else the value). */
export function reasonText(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason)
}
