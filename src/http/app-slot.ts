import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { errors } from '../errors.js'
import { Header, newRequestId } from '../headers.js'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

interface Generation {
  handler: Handler
  app: FastifyInstance | undefined
  /** Requests it has not answered yet. */
  open: number
  /** Set while it waits for its last request before it closes. */
  drained: (() => void) | undefined
}

/**
 * One listening HTTP server for a succession of apps (a gateway's configuration reloads): each
 * request goes to the newest app. An app that a newer one replaced is closed at once, as at a
 * shutdown: its streams end (their clients reconnect, to the newer app) and it takes nothing new,
 * while the requests it has go on to their answers. The apps never listen: Fastify's
 * `serverFactory` ({@link factory}) hands each one this server, so `app.server` is the listening one.
 */
export class AppSlot {
  readonly server: Server
  #current: Generation | undefined
  #next: Generation | undefined
  readonly #retiring = new Set<Generation>()
  #closing = false

  constructor(
    options: ServerOptions,
    readonly version: string
  ) {
    this.server = createServer(options, (req, res) => this.#dispatch(req, res))
  }

  /** Fastify's `serverFactory` for the next app: its handler is kept, and this server given. */
  readonly factory = (handler: Handler): Server => {
    this.#next = { handler, app: undefined, open: 0, drained: undefined }
    return this.server
  }

  /**
   * From now on `app` (built with {@link factory} last, and ready) takes the new requests. The app
   * before it closes; the promise settles once the last of its requests is answered.
   */
  async swap(app: FastifyInstance): Promise<void> {
    const next = this.#next!
    this.#next = undefined
    next.app = app
    this.#oneClientErrorListener()
    const before = this.#current
    this.#current = next
    if (before === undefined) return
    this.#retiring.add(before)
    await before.app!.close()
    await this.#drained(before)
    this.#retiring.delete(before)
  }

  /** The app a failed reload built (with {@link factory}) is not served: close it. */
  async discard(app: FastifyInstance | undefined): Promise<void> {
    this.#next = undefined
    this.#oneClientErrorListener()
    await app?.close()
  }

  // Fastify adds a clientError listener to the server of each app; the first says it all.
  #oneClientErrorListener(): void {
    for (const extra of this.server.listeners('clientError').slice(1)) this.server.removeListener('clientError', extra as Handler)
  }

  #drained(gen: Generation): Promise<void> {
    if (gen.open === 0) return Promise.resolve()
    return new Promise((resolve) => (gen.drained = resolve))
  }

  #dispatch(req: IncomingMessage, res: ServerResponse): void {
    // The server listens once the first app is in.
    const gen = this.#current!
    gen.open++
    res.once('close', () => {
      if (--gen.open === 0) gen.drained?.()
    })
    // Counted too: the connections are closed once every answer, a refusal included, is out.
    if (this.#closing) return this.#refuse(res)
    gen.handler(req, res)
  }

  /** While the process shuts down: the 503 every app answers then (see shapeRootErrors), and the connection closed. */
  #refuse(res: ServerResponse): void {
    const error = errors.shuttingDown()
    const body = JSON.stringify(error.toJSON())
    res.writeHead(error.status, {
      ...error.headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      [Header.protocolVersion]: this.version,
      [Header.requestId]: newRequestId(),
      connection: 'close'
    })
    res.end(body)
  }

  /**
   * Stop: no new connection, a 503 to each new request on a kept-alive one, the current app closed
   * (its streams end), and every request of every app answered.
   */
  async close(): Promise<void> {
    this.#closing = true
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()))
    this.server.closeIdleConnections()
    const current = this.#current
    if (current !== undefined) {
      await current.app!.close()
      await this.#drained(current)
    }
    await Promise.all([...this.#retiring].map((gen) => this.#drained(gen)))
    // Every request is answered: what is left are idle kept-alive connections.
    this.server.closeAllConnections()
    await stopped
  }
}
