import type { FastifyReply, FastifyRequest } from 'fastify'
import { metaProgressToken, type CallContext } from '../core/call-context.js'
import { toMcpError } from './error-reply.js'
import { MetaKey } from '../protocol.js'
import type { MaybePromise } from '../core/maybe-promise.js'

/** Whether the client asked for the result as a stream (`Accept: text/event-stream`). */
export function wantsStream(request: FastifyRequest): boolean {
  return request.headers.accept?.includes('text/event-stream') ?? false
}

/**
 * Answer as Server-Sent Events: the request's notifications (progress, log messages) as `notification`
 * events while it runs, then one `result` event (or `error`) and the end of the stream. The
 * handler's ctx.progress and ctx.sendLog write to the stream instead of the connection's queue.
 */
export async function streamResult<R>(
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: CallContext,
  run: (ctx: CallContext) => MaybePromise<R>
): Promise<void> {
  const res = reply.raw
  reply.hijack()
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = String(v)
  res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' })
  // The stream starts now, even if the handler is quiet for a while.
  res.flushHeaders()
  const send = (event: string, data: unknown) => {
    if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  }
  ctx.outlet = {
    // A streamed call always gets its progress: under its progressToken, else its request id.
    progressToken: (c) => metaProgressToken(c) ?? c.requestId,
    // On a stream the request says its level in _meta (any era); without one, no log messages.
    logFloor: (c) => c.meta?.[MetaKey.logLevel],
    send: (_c, message) => send('notification', message)
  }
  try {
    send('result', await run(ctx))
  } catch (err) {
    send('error', toMcpError(err, request).toJSON())
  }
  res.end()
}
