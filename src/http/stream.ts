import type { FastifyReply, FastifyRequest } from 'fastify'
import { derive, type RequestContext } from '../core/context.js'
import { toMcpError } from './errors.js'
import { MetaKey } from '../protocol.js'
import { LoggingLevels, type LoggingLevel } from '../schema/lifecycle.js'

/** Whether the client asked for the result as a stream (`Accept: text/event-stream`). */
export function wantsStream(request: FastifyRequest): boolean {
  return request.headers.accept?.includes('text/event-stream') ?? false
}

/**
 * Answer as Server-Sent Events: the request's notifications (progress, log messages) as `notification`
 * events while it runs, then one `result` event (or `error`) and the end of the stream. The
 * handler's ctx.progress and ctx.sendLog write to the stream instead of the connection's queue.
 */
export async function streamResult(
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: RequestContext,
  run: (ctx: RequestContext) => Promise<Record<string, unknown>>
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
  const token = ctx.meta?.[MetaKey.progressToken] ?? ctx.requestId
  const floor = ctx.meta?.[MetaKey.logLevel]
  const streamed = derive(ctx, {
    progress: async (progress: number, total?: number, message?: string) => {
      const params: Record<string, unknown> = { progressToken: token, progress }
      if (total !== undefined) params.total = total
      if (message !== undefined) params.message = message
      send('notification', { method: 'notifications/progress', params })
    },
    // On a stream the request says its level in _meta (any era); without one, no log messages.
    sendLog: async (level: LoggingLevel, data: unknown, logger?: string) => {
      const min = typeof floor === 'string' ? LoggingLevels.indexOf(floor as LoggingLevel) : -1
      if (min === -1 || LoggingLevels.indexOf(level) < min) return
      send('notification', { method: 'notifications/message', params: logger === undefined ? { level, data } : { level, data, logger } })
    }
  })
  try {
    send('result', await run(streamed))
  } catch (err) {
    send('error', toMcpError(err, request).toJSON())
  }
  res.end()
}
