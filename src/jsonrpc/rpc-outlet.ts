import { metaProgressToken, type CallContext, type Outlet } from '../core/call-context.js'
import { ErrorCode, McpError } from '../errors.js'
import type { RequestId } from './message.js'
import type { ResponseStream } from './response-stream.js'

/** Client capabilities that only server-to-client requests use. */
const ASKING = new Set(['elicitation', 'sampling', 'roots'])
const NATIVE_TASKS = new Set(['tasks'])
const ASKING_AND_TASKS = new Set([...ASKING, ...NATIVE_TASKS])

/**
 * The key under which a legacy-era JSON-RPC request can be cancelled (`notifications/cancelled`
 * names the JSON-RPC id); kept apart from the Pure HTTP binding's `Mcp-Request-Id`s.
 */
export const cancelKey = (id: RequestId): string => `jsonrpc:${JSON.stringify(id)}`

/**
 * Where a JSON-RPC request's notifications go: on the request's own response, which becomes an SSE
 * stream when the first is sent; progress when the request carries a `progressToken`, log messages at
 * or above the level the client asked for (the request's `_meta` level in 2026-07-28, the
 * connection's `logging/setLevel` before). Never to the connection's queue: `GET /notifications` is
 * the Pure HTTP binding's.
 *
 * In the legacy era a handler's questions (elicitation, sampling, roots) go out on that stream too,
 * as JSON-RPC requests whose ids are their `/requests` queue ids; the client answers each with a
 * POST of its own, which completes it through the store (see `answerRequest`).
 */
export function rpcOutlet(stream: ResponseStream, queue: Outlet): Outlet {
  return {
    progressToken: metaProgressToken,
    logFloor: queue.logFloor,
    send: (_ctx, message) => stream.notify(message),
    deliverRequest: stream.accepted ? (id, request) => stream.request(id, request) : undefined
  }
}

/**
 * A legacy-era client that does not accept `text/event-stream` cannot be asked: the capabilities to
 * answer are withheld from it, so a handler that asks fails at once with -32021 (see
 * {@link explainAsk}) instead of waiting on the `/requests` queue for an answer that cannot come.
 * 2025-11-25's own `tasks` capability asks for its nested, client-requested tasks, which this face
 * does not speak: only a client that declared the Tasks extension gets (extension) tasks.
 */
export function narrowCapabilities(ctx: CallContext, stream: ResponseStream): CallContext {
  const caps = ctx.clientCapabilities
  if (ctx.era !== 'legacy' || caps === undefined) return ctx
  const hidden = stream.accepted ? NATIVE_TASKS : ASKING_AND_TASKS
  ctx.clientCapabilities = Object.fromEntries(Object.entries(caps).filter(([k]) => !hidden.has(k)))
  return ctx
}

/** A legacy-era -32021 for asking says why a client without SSE, which may well have declared the capability, is not asked. */
export function explainAsk(error: McpError): McpError {
  const required = error.code === ErrorCode.missingCapability ? (error.data as { requiredCapabilities?: object } | undefined)?.requiredCapabilities : undefined
  if (required === undefined || !Object.keys(required).some((k) => ASKING.has(k))) return error
  return error.with({
    message: `${error.message}. Over /mcp a client of protocol 2025-11-25 or 2025-06-18 is asked on the SSE stream of its POST: send Accept: application/json, text/event-stream`
  })
}
