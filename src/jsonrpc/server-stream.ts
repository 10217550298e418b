import type { FastifyReply, FastifyRequest } from 'fastify'
import { jsonRpcFraming, openEventStream } from '../http/event-stream.js'

// The GET stream answers no request: it never sends a result.
const NO_RESULT = jsonRpcFraming(null)

/**
 * The legacy era's server stream (2025-06-18, 2025-11-25: `GET /mcp` with `Accept: text/event-stream`):
 * what the connection's queue holds, the queue `GET /notifications` hands out. That is every
 * notification outside a request: list changes, `resources/updated` of its subscriptions, log
 * messages at its level (`mcp.log`). Each group is acknowledged once written, so a notification
 * goes to one reader, this stream or a Pure HTTP poller of the same connection.
 *
 * The stream reads the queue when the catalogue changes here, and every `pollMs` (what another
 * instance queued, an update, a log message): a notification arrives within that. A connection has
 * one stream per instance (a newer one ends the older, which would hand out the same group twice).
 */
export class ServerStreams {
  readonly #open = new Map<string, () => void>()

  constructor(
    readonly keepAliveMs: number,
    readonly pollMs: number
  ) {}

  open(request: FastifyRequest, reply: FastifyReply): void {
    const mcp = request.server.mcp
    const owner = request.mcpState.principal.id
    const { res, send, stopKeepAlive } = openEventStream(request, reply, this.keepAliveMs, NO_RESULT)
    // Opened (a client past its stream slots is refused first, its older stream left alone): the older ends.
    this.#open.get(owner)?.()
    let closed = false
    let wake: (() => void) | undefined
    const rest = () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.pollMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    const stopChanges = mcp.onChange(() => wake?.())
    const close = () => {
      if (closed) return
      closed = true
      stopKeepAlive()
      stopChanges()
      wake?.()
      if (this.#open.get(owner) === close) this.#open.delete(owner)
      res.end()
    }
    this.#open.set(owner, close)
    res.on('close', close)
    void (async () => {
      while (!closed) {
        const group = await mcp.messages.takeNotifications(owner)
        if (group === undefined) {
          await rest()
          continue
        }
        for (const n of group.notifications) send(n)
        // Written, or the stream closed meanwhile: then the group stays for the next reader.
        // Not the current group any more (a poller of the same connection acknowledged it): no matter.
        if (!closed) await mcp.messages.acknowledge(owner, group.id).catch(() => undefined)
      }
    })().catch((err: unknown) => {
      request.log.warn({ err }, 'server stream ended: the store failed')
      close()
    })
  }

  /** End every stream (the server is closing): their clients reconnect elsewhere. */
  closeAll(): void {
    for (const close of [...this.#open.values()]) close()
  }
}
