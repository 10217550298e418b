import type { FastifyReply } from 'fastify'
import type { OutgoingHttpHeaders } from 'node:http'

/**
 * The response to one JSON-RPC request, which turns into an SSE stream the moment the first
 * notification or server-to-client request for it is sent (progress, log messages, a legacy-era
 * elicitation), and only if the client accepts
 * `text/event-stream`. Until then nothing is written: a request that notifies nothing is answered
 * with one JSON body and the status its outcome calls for, errors included.
 */
export class ResponseStream {
  #open = false

  constructor(
    readonly reply: FastifyReply,
    /** Whether the client's `Accept` takes `text/event-stream`; without it notifications are dropped. */
    readonly accepted: boolean
  ) {}

  /** True once the response is an SSE stream: the outcome then goes out as its last event. */
  get open(): boolean {
    return this.#open
  }

  /** Send a notification (`{ method, params }`) on the stream, opening it if need be. */
  notify(message: { method: string; params?: Record<string, unknown> }): void {
    this.#write(message)
  }

  /** Send a server-to-client request (legacy era) on the stream; its answer comes in a POST of its own. */
  request(id: string, message: { method: string; params?: Record<string, unknown> }): void {
    this.#write({ id, ...message })
  }

  #write(message: object): void {
    if (!this.accepted) return
    const res = this.reply.raw
    if (!this.#open) {
      this.#open = true
      this.reply.hijack()
      res.writeHead(200, {
        ...(this.reply.getHeaders() as OutgoingHttpHeaders),
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no'
      })
    }
    // A client that left has closed the stream: what it would have been told is dropped.
    if (!res.writableEnded && !res.destroyed) res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`)
  }

  /** The JSON-RPC response as the final event, then the end of the stream. */
  end(response: string): void {
    const res = this.reply.raw
    if (!res.destroyed) res.end(`data: ${response}\n\n`)
  }
}
