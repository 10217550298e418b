import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { withResourceMetadata } from '../auth/bearer.js'
import type { CallContext } from '../core/call-context.js'
import { ErrorCode, McpError, errors } from '../errors.js'
import { Header } from '../headers.js'
import { toMcpError } from '../http/error-reply.js'
import { cancellable, createContext, type RetryParams } from '../http/request.js'
import { cancelKey, explainAsk, narrowCapabilities, rpcOutlet } from './rpc-outlet.js'
import { byHeader, settleVersion } from './era.js'
import { checkStandardHeaders, headerValue } from './standard-headers.js'
import { ListenStreams } from '../messaging/listen.js'
import { ServerStreams } from './server-stream.js'
import { STREAMED, errorText, idOf, parseMessage, resultText, type RequestId } from './message.js'
import { methodFor, run, type Call } from './rpc-methods.js'
import { ResponseStream } from './response-stream.js'
import { REPLAYED, claimCall, record } from './replay.js'
import type { IdempotentCalls } from '../core/idempotency.js'
import type { Era, ProtocolVersion } from '../protocol.js'

/** Options of the Streamable HTTP (JSON-RPC) endpoint. */
export interface JsonRpcOptions {
  /** Where it answers, under the plugin's prefix (default `/mcp`). */
  path?: string
  /** How often a quiet `subscriptions/listen` or `GET` stream sends a keep-alive comment (default 15 s). */
  keepAliveMs?: number
  /** How often a legacy `GET` stream reads its connection's queue besides when the catalogue changes (default 1 s). */
  pollMs?: number
}

interface EndpointOptions extends JsonRpcOptions {
  /** The version of legacy-era messages without `MCP-Protocol-Version` (a 2026-07-28 default means 2025-11-25). */
  defaultVersion: ProtocolVersion
  /** The `resource_metadata` URL that 401 and 403 challenges name (OAuth). */
  metadataUrl: string | undefined
  /** Deduplication of retried tool calls, shared with the Pure HTTP face. */
  calls: IdempotentCalls
}

const JSON_TYPE = 'application/json; charset=utf-8'
// The JSON-RPC id of each request, once read, so that every error names it (notifications: none).
const rpcIds = new WeakMap<FastifyRequest, RequestId | null | undefined>()
// What 2026-07-28 answers with a status of its own even when a handler raises it.
const STATUS_CODES = new Set<number>([ErrorCode.methodNotFound, ErrorCode.headerMismatch, ErrorCode.missingCapability, ErrorCode.unsupportedVersion])

/**
 * The Streamable HTTP transport (JSON-RPC over `POST /mcp`) for 2025-06-18, 2025-11-25 and 2026-07-28,
 * stateless: no session; one JSON response per request, or an SSE stream once the request has
 * notifications or, in the legacy era, questions to send (progress, log messages, elicitation; see
 * `ResponseStream`). A second face over the same core as the Pure
 * HTTP routes: it reads the message, settles its version (see `settleVersion`), builds the core's
 * context with the same `createContext`, and calls the same `McpServer` methods.
 *
 * Statuses: malformed messages and transport failures 4xx; the 2026-07-28 envelope and header checks
 * 400 (-32602, -32020, -32022), unknown methods 404 (-32601), -32021 400; every other JSON-RPC error,
 * and every legacy-era one, rides in a 200 (as the official SDKs answer), except 401/403 challenges.
 */
const mcpEndpoint: FastifyPluginAsync<EndpointOptions> = async (fastify, opts) => {
  const path = opts.path ?? '/mcp'
  const streams = new ListenStreams(opts.keepAliveMs ?? 15_000)
  const serverStreams = new ServerStreams(opts.keepAliveMs ?? 15_000, opts.pollMs ?? 1000)
  fastify.addHook('preClose', async () => {
    streams.closeAll()
    serverStreams.closeAll()
  })

  // Everything thrown on this endpoint, the hooks' refusals included, leaves in the JSON-RPC envelope.
  fastify.setErrorHandler((err, request, reply) => {
    let error = toMcpError(err, request)
    if (opts.metadataUrl !== undefined) error = withResourceMetadata(error, opts.metadataUrl, request)
    if (error.headers !== undefined) reply.headers(error.headers)
    reply.code(error.status).type(JSON_TYPE).send(errorText(rpcIds.has(request) ? rpcIds.get(request) : null, error))
  })

  fastify.post(path, { config: { mcpJsonRpc: true }, schema: { hide: true } }, async (request, reply) => {
    rpcIds.set(request, idOf(request.body))
    const msg = parseMessage(request.body)
    // A client's answer to a server-to-client request (a legacy-era question on a POST's SSE stream):
    // checked and completed through the store, which wakes the handler on whichever instance waits.
    if (msg.kind === 'response') {
      await request.server.mcp.messages.answer(request.mcpState.principal.id, String(msg.id), msg.answer)
      return reply.code(202).send()
    }
    if (msg.kind === 'notification') rpcIds.set(request, undefined)
    const settled = settleVersion(msg, headerValue(request.headers, Header.protocolVersion), opts.defaultVersion)
    Object.assign(request.mcpState, { version: settled.version, era: settled.era, versionFromHeader: settled.fromHeader })
    reply.header(Header.protocolVersion, settled.version)
    if (settled.era === 'modern') checkStandardHeaders(msg, request.headers)
    if (msg.kind === 'notification') {
      // 2026-07-28 cancels by closing the stream; a legacy client names the request it cancels.
      if (msg.method === 'notifications/cancelled' && settled.era === 'legacy') await cancel(request, msg.params)
      return reply.code(202).send()
    }

    const legacy = settled.era === 'legacy'
    // A legacy request is known by its JSON-RPC id, which notifications/cancelled names.
    if (legacy) request.mcpState.requestId = cancelKey(msg.id)
    // Before the method runs, and outside its error handling: a retry's 409 keeps its status.
    const claim = msg.method === 'tools/call' ? await claimCall(opts.calls, request, reply, msg.id, msg.params, settled.version) : undefined
    if (claim === REPLAYED) return reply
    const stream = new ResponseStream(reply, headerValue(request.headers, 'accept')?.includes('text/event-stream') === true)
    let context: Promise<CallContext> | undefined
    // A request that may turn into a stream holds a stream slot while it runs: the turn comes at its
    // first notification, mid-run, too late for a clear refusal, so the slot is taken before the
    // method does any work (where it builds its context; lists and discover never stream).
    const contextOf = () => {
      if (stream.accepted) request.server.mcpStreams.take(request, reply)
      return createContext(request, reply, msg.params as RetryParams, outlet).then((ctx) => narrowCapabilities(legacy ? cancellable(ctx, reply) : ctx, stream))
    }
    const outlet = rpcOutlet(stream, request.server.mcp.queue)
    const call: Call = {
      request,
      reply,
      id: msg.id,
      era: settled.era,
      streams,
      context: () => (context ??= contextOf())
    }
    let answer
    try {
      answer = await run(methodFor(msg.method, settled.era), msg.method, msg.params, call)
    } catch (err) {
      // The key is free again; a store that cannot say so lets the claim's lease lapse.
      await claim?.abandon().catch((e: unknown) => request.log.warn({ err: e }, 'idempotency claim not released'))
      const error = inBand(toMcpError(err, request), settled.era)
      if (!stream.open) throw legacy && !stream.accepted ? explainAsk(error) : error
      // Notifications went out already: the error is the stream's last event.
      stream.end(errorText(msg.id, error))
      return reply
    }
    if (answer === STREAMED) return reply
    const result = typeof answer === 'string' ? answer : JSON.stringify(answer)
    // Kept before the answer leaves, so that a retry that follows it finds it.
    if (claim !== undefined) await record(claim, reply, result)
    const text = resultText(msg.id, result)
    if (!stream.open) return reply.type(JSON_TYPE).send(text)
    stream.end(text)
    return reply
  })

  // The legacy era's stream of the connection's notifications (see ServerStreams). 2026-07-28 has
  // subscriptions/listen instead, and a client that does not take SSE has no stream to get: 405, as
  // the Streamable HTTP transport lets a server answer.
  fastify.get(path, { config: { mcpJsonRpc: true }, schema: { hide: true } }, async (request, reply) => {
    const settled = byHeader(headerValue(request.headers, Header.protocolVersion), opts.defaultVersion)
    reply.header(Header.protocolVersion, settled.version)
    if (settled.era === 'modern' || headerValue(request.headers, 'accept')?.includes('text/event-stream') !== true) throw errors.methodNotAllowed(['GET', 'POST'])
    Object.assign(request.mcpState, { version: settled.version, era: settled.era, versionFromHeader: settled.fromHeader })
    serverStreams.open(request, reply)
    return reply
  })

  // No session to end (DELETE) on a stateless endpoint.
  fastify.route({
    method: ['DELETE', 'PUT', 'PATCH', 'OPTIONS'],
    url: path,
    config: { mcpJsonRpc: true },
    schema: { hide: true },
    handler: async () => {
      throw errors.methodNotAllowed(['GET', 'POST'])
    }
  })
}

/** `notifications/cancelled` from a legacy-era client: abort the request it names, on whichever instance runs it. */
async function cancel(request: FastifyRequest, params: Record<string, unknown>): Promise<void> {
  const id = params.requestId
  if (typeof id !== 'string' && typeof id !== 'number') throw errors.invalidParams('notifications/cancelled needs params.requestId')
  await request.server.mcp.messages.cancel(request.mcpState.principal.id, cancelKey(id), params.reason)
}

/** An error raised while serving a method, with the status its era gives it (see {@link mcpEndpoint}). */
function inBand(error: McpError, era: Era): McpError {
  if (error.headers !== undefined || (era === 'modern' && STATUS_CODES.has(error.code))) return error
  return error.with({ status: 200 })
}

export default mcpEndpoint
