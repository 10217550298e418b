import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** An open SSE response of the JSON-RPC face: `send` writes one JSON-RPC message as an event. */
export interface EventStream {
  readonly res: ServerResponse
  send(message: object): void
  /** Stop the keep-alive comments (the stream is ending). */
  stopKeepAlive(): void
}

/**
 * Turn `reply` into a long-lived SSE stream (subscriptions/listen, the legacy GET stream): it holds
 * one of the client's stream slots, Fastify lets go of it, its headers leave at once, and a comment
 * line every `keepAliveMs` keeps proxies and idle timeouts from closing it while it is quiet.
 */
export function openEventStream(request: FastifyRequest, reply: FastifyReply, keepAliveMs: number): EventStream {
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
    send: (message) => void res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`),
    stopKeepAlive: () => clearInterval(timer)
  }
}
