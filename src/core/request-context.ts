import type { Era, ProtocolVersion } from '../protocol.js'
import type { Meta } from '../schema/common.js'
import type { LoggingLevel } from '../schema/lifecycle.js'

/** Who is calling. Its `id` names the logical connection: one principal never sees another's state. */
export interface Principal {
  /** Stable identifier of the logical connection (issuer + subject, a session id, or `anonymous`). */
  readonly id: string
  readonly issuer?: string
  readonly subject?: string
  readonly scopes: readonly string[]
  readonly claims?: Readonly<Record<string, unknown>>
  readonly anonymous: boolean
}

export const ANONYMOUS: Principal = Object.freeze({ id: 'anonymous', scopes: Object.freeze([]), anonymous: true })

/** The subset of a pino logger the core uses; Fastify's request logger satisfies it. */
export interface Logger {
  debug(obj: unknown, msg?: string): void
  info(obj: unknown, msg?: string): void
  warn(obj: unknown, msg?: string): void
  error(obj: unknown, msg?: string): void
}

/**
 * Everything the core knows about one request, whichever face (Pure HTTP or JSON-RPC) it came from.
 * Handlers receive it (extended per kind) as their `ctx`.
 */
export interface RequestContext {
  /** `Mcp-Request-Id` of this request (generated when the client sent none). */
  readonly requestId: string
  readonly protocolVersion: ProtocolVersion
  readonly era: Era
  /** The request's `_meta` (from the body, or the `Mcp-Meta` header on GET). */
  readonly meta: Meta | undefined
  /** The client's capabilities: this request's `_meta` envelope (modern) or its `initialize` (legacy). */
  readonly clientCapabilities: Readonly<Record<string, unknown>> | undefined
  readonly principal: Principal
  /** Aborted when the client goes away or cancels the request. */
  readonly signal: AbortSignal
  /**
   * When this request should be answered by (epoch ms): `maxRequestMs` after it arrived. Long work
   * past it returns a part with `resumable(...)`, so no request outlives a load balancer's timeout.
   */
  readonly deadline: number
  /** The server's own log (not sent to the client). */
  readonly log: Logger
  /** `notifications/progress`, when the request asked for it with a `progressToken`; else nothing. */
  progress(progress: number, total?: number, message?: string): Promise<void>
  /**
   * `notifications/message` to the client, when its log level lets it through (the request's
   * `_meta["io.modelcontextprotocol/logLevel"]` in 2026-07-28, `POST /logLevel` before).
   */
  sendLog(level: LoggingLevel, data: unknown, logger?: string): Promise<void>
  /**
   * Where a legacy-era server-to-client request (elicitation, sampling, roots) is written besides the
   * connection's `/requests` queue, under the id its answer must name: set by the JSON-RPC face, whose
   * client reads it on the SSE stream of its POST. The answer still completes it through the store.
   */
  readonly deliverRequest?: (id: string, request: { method: string; params?: Record<string, unknown> }) => void
}
