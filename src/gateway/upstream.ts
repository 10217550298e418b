import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Logger } from '../core/request-context.js'
import { McpError, errors, messageOf } from '../errors.js'
import type { ServerMessage } from '../store/types.js'
import { newConnection, type Progress, type UpstreamSpec } from './connection.js'
import { Chain } from './chain.js'
import type { Cancel } from '../core/cancel.js'
import { DEFAULT_REQUEST_TIMEOUT_MS, Deadline } from './deadline.js'
import { upstreamError } from './errors.js'
import { loadSdk, type Sdk } from './sdk.js'
import { StdioChild } from './stdio.js'
import { Wire } from './wire.js'

export type { Progress, UpstreamSpec } from './connection.js'

/**
 * `failed`: a command whose first start failed (missing, not executable, or exiting before it
 * answered `initialize`): a mistake in the configuration, which restarts would only repeat; `down`:
 * a connection that worked was lost, or an HTTP server is not reachable (yet), and is retried.
 */
export type UpstreamState = 'starting' | 'up' | 'down' | 'failed' | 'closed'
export const UPSTREAM_STATES: readonly UpstreamState[] = ['starting', 'up', 'down', 'failed', 'closed']

/**
 * Every upstream of this process (what telemetry reports as the gateway's state). A closed one
 * leaves at once, or, while telemetry watches, once it has been reported closed.
 */
export const upstreams = new Set<Upstream>()
export const watched = { upstreams: false }

export interface UpstreamOptions {
  /** A name for the logs (the `mcpServers` key, or the command). */
  name: string
  log: Logger
  /** First restart delay after the connection is lost (default 500 ms); doubled each failure. */
  restartMinMs?: number
  /** Longest restart delay (default 30 s). */
  restartMaxMs?: number
  /**
   * How long an upstream request may go without a sign of life (its answer, or a progress
   * notification, each of which starts the wait again) before it fails with 504 and the upstream is
   * told `notifications/cancelled`; the wait stops while the upstream waits for a client's answer to
   * one of its own requests. Default 60 s (the SDK's own default); 0: no deadline. An answer that
   * is not JSON, or has an id nobody asked for, is logged and dropped: the deadline is what ends its
   * request. (One with the request's id but neither a result nor an error fails it at once, 502.)
   */
  requestTimeoutMs?: number
  /** How long connecting (initialize) may take (default 30 s). */
  connectTimeoutMs?: number
  /** The upstream is pinged this often while up (default 15 s)... */
  pingIntervalMs?: number
  /** ...and is taken for dead when a ping is not answered this soon (default 10 s): calls in flight fail, it is reconnected. */
  pingTimeoutMs?: number
}

/** Everything the gateway hears from an upstream, besides the answers to its requests. */
export interface UpstreamEvents {
  /** A connection (first or after a restart) is ready: fetch the lists again. */
  connected(client: Client): void
  /** A server notification (list_changed, resources/updated, message). */
  notified(message: ServerMessage): void
  /** A server-to-client request (elicitation, sampling, roots): resolve its result or throw. */
  asked(request: ServerMessage, signal: AbortSignal): Promise<Record<string, unknown>>
}

// A connection that lasted this long was healthy: the next failure starts the backoff again.
const STABLE_MS = 10_000

/**
 * A supervised connection to an upstream MCP server. The official SDK's `Client` opens it
 * (`initialize`) and hears what the upstream sends of its own (notifications, requests); the
 * gateway's requests go on a {@link Wire} beside it, and a stdio child is a {@link StdioChild}. A stdio
 * child that exits, an HTTP server that cannot be reached, or either that stops answering pings is
 * reconnected with exponential backoff; meanwhile requests fail at once with 503 and
 * `Retry-After`, never hang, and requests in flight when it died fail with 502.
 */
export class Upstream {
  state: UpstreamState = 'starting'
  /** The current connection's client, while `up`. */
  client: Client | undefined
  /** The gateway's requests on the current connection, while `up`. */
  #wire: Wire | undefined
  /** Why the last connection failed or ended (with the child's last line on stderr, when it wrote one). */
  lastError = 'not connected yet'
  #stderr: string | undefined
  #connectedOnce = false
  readonly #spec: UpstreamSpec
  readonly #opts: Required<Omit<UpstreamOptions, 'log' | 'name'>> & Pick<UpstreamOptions, 'log' | 'name'>
  readonly #events: UpstreamEvents
  #failures = 0
  #retryAt = 0
  #timer: NodeJS.Timeout | undefined
  #pinger: NodeJS.Timeout | undefined
  #pid: number | undefined
  /** Who hears each token's progress, while its request runs (emptied at its end: see `request`). */
  readonly #progress = new Map<string, { deadline: Deadline | undefined; heard: ((p: Progress) => void) | undefined }>()
  #tokens = 0
  /** The deadlines of the requests in flight; paused while the upstream waits for an answer of ours. */
  readonly #deadlines = new Chain<Deadline>()
  #asking = 0

  constructor(spec: UpstreamSpec, options: UpstreamOptions, events: UpstreamEvents) {
    this.#spec = spec
    this.#opts = {
      restartMinMs: 500,
      restartMaxMs: 30_000,
      requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
      connectTimeoutMs: 30_000,
      pingIntervalMs: 15_000,
      pingTimeoutMs: 10_000,
      ...options
    }
    this.#events = events
    upstreams.add(this)
  }

  get name(): string {
    return this.#opts.name
  }

  /** The stdio child's process id while it runs. */
  get pid(): number | undefined {
    return this.#pid
  }

  /** Connect; resolves once the first attempt succeeded or failed (failures are retried in the background). */
  async start(): Promise<boolean> {
    return this.#connect(await loadSdk())
  }

  async #connect(sdk: Sdk): Promise<boolean> {
    if (this.state === 'closed') return false
    this.state = 'starting'
    // What this attempt's child says, not an earlier one's: its last line goes into a failure's reason.
    this.#stderr = undefined
    const { client, transport } = newConnection(sdk, this.#spec, this.#opts.name, this.#opts.log, {
      notified: (m) => this.#events.notified(m),
      asked: (r, signal) => this.#asked(r, signal),
      progress: (token, p) => {
        const listener = this.#progress.get(token)
        if (listener === undefined) return
        // Progress is a sign of life: the deadline starts again.
        listener.deadline!.touch()
        listener.heard!(p)
      },
      stderr: (line) => (this.#stderr = line)
    })
    const started = Date.now()
    // What the connection could not read (a line that is not JSON, an answer to nobody): dropped,
    // and said; at warn once a connection (a server that logs on stdout would fill the log). A
    // request this gateway would not send (a DPoP-bound token to forward, an exchange refused) is
    // also told here by the SDK's transport before it throws: that is the caller's answer, not news.
    let dropped = 0
    client.onerror = (err) => {
      if (err instanceof McpError) return
      const log = this.#opts.log
      ;(dropped++ === 0 ? log.warn : log.debug).call(log, { upstream: this.#opts.name, reason: err.message }, 'upstream message dropped')
    }
    client.onclose = () => {
      if (this.client !== client) return
      this.client = undefined
      this.#wire = undefined
      this.#pid = undefined
      clearInterval(this.#pinger)
      // A race to test: whether a connection lasted STABLE_MS depends on the machine's speed.
      /* c8 ignore next */
      if (Date.now() - started >= STABLE_MS) this.#failures = 0
      this.#lost('the connection closed')
    }
    try {
      await client.connect(transport as never, { timeout: this.#opts.connectTimeoutMs })
    } catch (err) {
      await client.close().catch(() => undefined)
      // Set by the child's stderr meanwhile (TypeScript sees only the reset above).
      const said = this.#stderr as string | undefined
      const why = said === undefined ? messageOf(err) : `${messageOf(err)} (its stderr: ${said.slice(0, 512)})`
      if (!this.#connectedOnce && 'command' in this.#spec) return this.#failed(why)
      this.#lost(why)
      return false
    }
    // Closed while connecting (the gateway stopped during its start).
    if ((this.state as UpstreamState) === 'closed') {
      await client.close()
      return false
    }
    const wire = new Wire(transport, this.#opts.name)
    if (transport instanceof StdioChild) {
      this.#pid = transport.pid
      transport.busy = () => wire.size > 1
    }
    this.#connectedOnce = true
    this.client = client
    this.#wire = wire
    this.state = 'up'
    this.#pinger = setInterval(() => void this.#ping(client, wire), this.#opts.pingIntervalMs)
    this.#pinger.unref()
    this.#opts.log.info({ upstream: this.#opts.name, server: client.getServerVersion() }, 'upstream connected')
    this.#events.connected(client)
    return true
  }

  /** The upstream asks (elicitation, sampling, roots): no request of its own is late while it waits for us. */
  #asked(request: ServerMessage, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (this.#asking++ === 0) for (const d of this.#deadlines) d.pause()
    const answered = this.#events.asked(request, signal)
    const done = (): void => {
      if (--this.#asking === 0) for (const d of this.#deadlines) d.start()
    }
    answered.then(done, done)
    return answered
  }

  /** A ping not answered in time (a hung or vanished server): the connection is closed, and restarted. */
  async #ping(client: Client, wire: Wire): Promise<void> {
    const deadline = new Deadline(this.#opts.pingTimeoutMs)
    deadline.start()
    try {
      await wire.request('ping', {}, deadline.cancel)
    } catch (err) {
      // A race no test orders: the ping failed after the connection was lost and replaced.
      /* c8 ignore next */
      if (this.client !== client) return
      this.#opts.log.warn({ upstream: this.#opts.name, reason: messageOf(err) }, 'upstream stopped answering')
      await client.close()
    } finally {
      deadline.end()
    }
  }

  /** The command cannot start: said once, not retried (see {@link UpstreamState}). */
  #failed(why: string): false {
    this.lastError = why
    if (this.state !== 'closed') this.state = 'failed'
    this.#opts.log.error({ upstream: this.#opts.name, reason: why }, 'upstream could not start')
    return false
  }

  #lost(why: string): void {
    this.lastError = why
    if (this.state === 'closed') return
    this.state = 'down'
    const delay = Math.min(this.#opts.restartMaxMs, this.#opts.restartMinMs * 2 ** this.#failures++)
    this.#retryAt = Date.now() + delay
    this.#opts.log.warn({ upstream: this.#opts.name, reason: why, retryInMs: delay }, 'upstream down')
    this.#timer = setTimeout(() => void loadSdk().then((sdk) => this.#connect(sdk)), delay)
    this.#timer.unref()
  }

  /**
   * Send a request upstream. Down: 503 with `Retry-After` at once. The connection lost meanwhile:
   * 502. The upstream's own JSON-RPC errors keep their code, with the status the binding gives it.
   */
  async request(
    method: string,
    params: Record<string, unknown>,
    options: { signal?: AbortSignal | undefined; abort?: Cancel; onprogress?: (p: Progress) => void } = {}
  ): Promise<Record<string, unknown>> {
    const wire = this.#wire
    if (wire === undefined) {
      if (this.state === 'failed') throw errors.upstreamFailed(`The upstream server ${this.#opts.name} could not start: ${this.lastError}`)
      const wait = Math.max(1, Math.ceil((this.#retryAt - Date.now()) / 1000))
      throw errors.upstreamDown(`The upstream server ${this.#opts.name} is ${this.state === 'closed' ? 'stopped' : 'down'}; try again later`, wait)
    }
    const { onprogress, abort } = options
    // The caller's: its signal, or (a call's own, which only it aborts) its Cancel, which the deadline then aborts too.
    const cancelled = abort ?? options.signal
    const deadline = new Deadline(this.#opts.requestTimeoutMs, cancelled)
    this.#deadlines.add(deadline)
    if (this.#asking === 0) deadline.start()
    const token = onprogress === undefined ? undefined : `gw-${this.#tokens++}`
    const listener = { deadline: deadline as Deadline | undefined, heard: onprogress }
    if (token !== undefined) {
      this.#progress.set(token, listener)
      params = { ...params, _meta: { ...(params._meta as object | undefined), progressToken: token } }
    }
    try {
      return await wire.request(method, params, deadline.cancel)
    } catch (err) {
      if (deadline.passed) throw errors.upstreamTimeout(this.#opts.name, this.#opts.requestTimeoutMs)
      throw upstreamError(err, this.#opts.name, cancelled)
      /* c8 ignore next: no code runs after this catch, which always throws, but V8 counts the continuation (and maps it here) */
    } finally {
      deadline.end()
      this.#deadlines.delete(deadline)
      if (token !== undefined) this.#progress.delete(token)
      // The Map may keep the entry in its previous table until a full collection (see UpstreamCall's
      // end): it reaches the call no more.
      listener.deadline = listener.heard = undefined
    }
  }

  /** Stop: no more restarts; a stdio child is ended (stdin closed, then SIGTERM, then SIGKILL). */
  async close(): Promise<void> {
    this.state = 'closed'
    if (!watched.upstreams) upstreams.delete(this)
    clearTimeout(this.#timer)
    clearInterval(this.#pinger)
    const client = this.client
    this.client = undefined
    this.#wire = undefined
    // The child is waited for on unref'd timers: without a handle of our own, a gateway with
    // nothing else left to do would exit before its child has ended, leaving it running.
    const hold = setInterval(() => undefined, 1000)
    try {
      await client?.close()
    } finally {
      clearInterval(hold)
    }
  }
}
