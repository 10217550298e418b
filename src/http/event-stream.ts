import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** An open SSE response: `send` writes one message as an event, in the framing of the face that opened it. */
export interface EventStream {
  readonly res: ServerResponse
  /** A notification (`{method, params}`). */
  send(message: object): void
  /** The request's own result, the last event before the stream ends. */
  result(result: object): void
  /** Stop the keep-alive comments (the stream is ending). */
  stopKeepAlive(): void
}

/**
 * How a face writes an event: the JSON-RPC face sends each message as `data:` with its envelope; the
 * Pure HTTP face names the event (`notification`, `result`) as its streamed tool calls do.
 */
export interface Framing {
  notification(message: object): string
  result(result: object): string
}

/** `/mcp`: JSON-RPC messages, the result under the request's id. */
export const jsonRpcFraming = (id: string | number | null): Framing => ({
  notification: (message) => `data: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`,
  result: (result) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`
})

/** The Pure HTTP face: named events, as `POST /tools/{name}/calls` streams them. */
export const restFraming: Framing = {
  notification: (message) => `event: notification\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`,
  result: (result) => `event: result\ndata: ${JSON.stringify(result)}\n\n`
}

/**
 * Turn `reply` into a long-lived SSE stream (subscriptions/listen on either face, the legacy GET
 * stream of /mcp): it holds one of the client's stream slots, Fastify lets go of it, its headers
 * leave at once, and a comment line every `keepAliveMs` keeps proxies and idle timeouts from
 * closing it while it is quiet.
 */
export function openEventStream(request: FastifyRequest, reply: FastifyReply, keepAliveMs: number, framing: Framing): EventStream {
  request.server.mcpStreams.take(request, reply)
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    // Tell nginx and friends not to hold the events back.
    'x-accel-buffering': 'no'
  })
  res.flushHeaders()
  const timer = setInterval(() => res.write(':\n\n'), keepAliveMs).unref()
  return {
    res,
    send: (message) => void res.write(framing.notification(message)),
    result: (result) => void res.write(framing.result(result)),
    stopKeepAlive: () => clearInterval(timer)
  }
}
