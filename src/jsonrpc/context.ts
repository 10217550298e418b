import type { RequestContext } from '../core/context.js'
import { ErrorCode, McpError } from '../errors.js'
import { MetaKey } from '../protocol.js'
import { LoggingLevels, type LoggingLevel } from '../schema/lifecycle.js'
import type { RequestId } from './message.js'
import type { ResponseStream } from './stream.js'

/** Client capabilities that only server-to-client requests use. */
const ASKING = new Set(['elicitation', 'sampling', 'roots'])

/**
 * The key under which a legacy-era JSON-RPC request can be cancelled (`notifications/cancelled`
 * names the JSON-RPC id); kept apart from the Pure HTTP binding's `Mcp-Request-Id`s.
 */
export const cancelKey = (id: RequestId): string => `jsonrpc:${JSON.stringify(id)}`

/**
 * The core's context for a JSON-RPC request. Its notifications go on the request's own response,
 * which becomes an SSE stream when the first is sent: progress when the request carries a
 * `progressToken`, log messages at or above the level the client asked for (`floor`: the request's
 * `_meta` level in 2026-07-28, the connection's `logging/setLevel` before). Never to the connection's
 * queue: `GET /notifications` is the Pure HTTP binding's.
 *
 * In the legacy era the client is not asked anything: a 2025-era server-to-client request would go
 * out on that stream too, but its answer (a JSON-RPC response POSTed to the endpoint) has no route
 * back to the waiting handler yet. So the capabilities to answer one are withheld, and a handler that
 * asks fails at once with -32021 (see {@link explainAsk}) instead of waiting on the `/requests`
 * queue for an answer that cannot come. This is the seam legacy questions over SSE replace.
 */
export function jsonRpcContext(ctx: RequestContext, stream: ResponseStream, floor: unknown): RequestContext {
  const token = ctx.meta?.[MetaKey.progressToken]
  const min = typeof floor === 'string' ? LoggingLevels.indexOf(floor as LoggingLevel) : -1
  const overrides: PropertyDescriptorMap = {
    progress: {
      value: async (progress: number, total?: number, message?: string) => {
        if (typeof token !== 'string' && typeof token !== 'number') return
        const params: Record<string, unknown> = { progressToken: token, progress }
        if (total !== undefined) params.total = total
        if (message !== undefined) params.message = message
        stream.notify({ method: 'notifications/progress', params })
      }
    },
    sendLog: {
      value: async (level: LoggingLevel, data: unknown, logger?: string) => {
        if (min < 0 || LoggingLevels.indexOf(level) < min) return
        stream.notify({ method: 'notifications/message', params: logger === undefined ? { level, data } : { level, data, logger } })
      }
    }
  }
  const caps = ctx.clientCapabilities
  if (ctx.era === 'legacy' && caps !== undefined) {
    overrides.clientCapabilities = { value: Object.fromEntries(Object.entries(caps).filter(([k]) => !ASKING.has(k))) }
  }
  return Object.create(ctx, overrides) as RequestContext
}

/** A legacy-era -32021 for asking says why the client, which may well have declared the capability, is not asked. */
export function explainAsk(error: McpError): McpError {
  const required = error.code === ErrorCode.missingCapability ? (error.data as { requiredCapabilities?: object } | undefined)?.requiredCapabilities : undefined
  if (required === undefined || !Object.keys(required).some((k) => ASKING.has(k))) return error
  return new McpError(
    error.code,
    `${error.message}. Over /mcp a client of protocol 2025-11-25 or 2025-06-18 cannot be asked yet (its answer has no way back to the handler): use 2026-07-28 (input_required), or the Pure HTTP binding`,
    error.status,
    error.data
  )
}
