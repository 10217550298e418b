import type { Logger } from '../core/request-context.js'
import type { LoggingLevel } from '../schema/lifecycle.js'
import type { CallContext } from '../core/call-context.js'
import type { Completer, RetryableContext } from '../core/definitions.js'
import { McpServer, type McpServerOptions } from '../core/mcp-server.js'
import type { ListKind } from '../core/registry.js'
import { taskStarted } from '../core/tools.js'
import { clientTakesTasks, startTask } from '../tasks/runner.js'
import type { ServerMessage, Store } from '../store/types.js'
import type { RoundRef, UpstreamCall } from './call.js'
import type { Cancel } from '../core/cancel.js'
import { handlerReturn, progressOf, relayLog, unlistedPrompt, unlistedResource, unlistedTool, type Forwarder } from './catalogue.js'
import { UpstreamLists } from './lists.js'
import type { RoundRelay } from './relay.js'
import { Rounds } from './rounds.js'
import { gatewayStore } from './store.js'
import { asGateway } from './connection.js'
import { headerText, modernRound, modernTarget, speaksModern, type ModernTarget } from './modern.js'
import { paramHeadersFor } from '../jsonrpc/standard-headers.js'
import { inputRequired } from '../mrtr/rounds.js'
import type { InputRequest } from '../schema/mrtr.js'
import { Upstream, type UpstreamOptions, type UpstreamSpec } from './upstream.js'
import { DEFAULT_REQUEST_TIMEOUT_MS } from './deadline.js'
import { copyOf } from '../core/results.js'

export interface GatewayOptions extends Omit<UpstreamOptions, 'log'> {
  spec: UpstreamSpec
  log: Logger
  /** Options of the {@link McpServer} (name and version come from the upstream). */
  server: Omit<McpServerOptions, 'name' | 'version'>
  relay: RoundRelay
  /** This instance's name (unique per process and mount): sealed in every round's state. */
  instance: string
  /** `/ready` is 503 while this upstream is down (default true). */
  required?: boolean
  /** A tools/call still running after this long becomes a task, for a client that takes tasks (default 5 s). */
  taskAfterMs?: number
  /** How long a finished task's result is kept (default 1 hour). */
  taskTtlMs?: number
  /** How many calls of one principal may wait for its answers at once (default 16); beyond: 429. */
  maxOpenRounds?: number
}

const CHANGED: Record<string, ListKind[]> = {
  'notifications/tools/list_changed': ['tools'],
  'notifications/prompts/list_changed': ['prompts'],
  'notifications/resources/list_changed': ['resources', 'templates']
}

/**
 * An upstream MCP server as a catalogue: its lists registered into an {@link McpServer} whose
 * handlers are the upstream's client, so every route, `/mcp` and the OpenAPI document serve it.
 * Lists are fetched at each connection and again when the upstream says `list_changed`.
 */
export class Gateway implements Forwarder {
  readonly upstream: Upstream
  readonly rounds: Rounds
  readonly required: boolean
  mcp!: McpServer
  lists: UpstreamLists | undefined
  /** The virtual servers that serve entries of this upstream: they hear its updates and log messages too. */
  readonly mirrors = new Set<McpServer>()
  readonly #opts: GatewayOptions
  readonly #subscribed = new Set<string>()
  /** Who wants the upstream subscribed to a URI: the mounts (this one's, virtual ones') that still have a subscriber. */
  readonly #holders = new Map<string, Set<string>>()
  /** Set while the upstream serves 2026-07-28: its calls' rounds pass through, stateless. */
  #modern: ModernTarget | undefined

  private constructor(opts: GatewayOptions) {
    this.#opts = opts
    this.required = opts.required ?? true
    this.rounds = new Rounds(opts.instance, opts.relay, opts.server.stateTtlMs ?? 15 * 60_000, opts.log, opts.maxOpenRounds ?? 16)
    this.upstream = new Upstream(opts.spec, opts, {
      // During start the catalogue is made once the first connection is up; later connections resync.
      connected: (client) => {
        void this.lists?.sync(client, this.#subscribed)
        void this.#probe()
      },
      notified: (m) => this.#notified(m),
      asked: (request, signal) => this.rounds.asked(request, signal)
    })
  }

  /** Connect to the upstream (once; a failure is retried in the background) and build the catalogue. */
  static async start(opts: GatewayOptions): Promise<Gateway> {
    const gw = new Gateway(opts)
    await gw.upstream.start()
    const client = gw.upstream.client
    const info = client?.getServerVersion()
    gw.mcp = new McpServer({
      name: info?.name ?? opts.name,
      version: info?.version ?? '0.0.0',
      ...(info?.title === undefined ? {} : { title: info.title }),
      ...(info?.description === undefined ? {} : { description: info.description }),
      ...(client?.getInstructions() === undefined ? {} : { instructions: client.getInstructions()! }),
      ...opts.server
    })
    gw.mcp.unlistedTool = unlistedTool(gw.mcp, gw)
    gw.mcp.unlistedResource = unlistedResource(gw.mcp, gw)
    gw.mcp.unlistedPrompt = unlistedPrompt(gw.mcp, gw)
    gw.lists = new UpstreamLists(gw.mcp, gw.upstream, gw, opts.log)
    if (client !== undefined) await gw.lists.sync(client, gw.#subscribed)
    if (client !== undefined) await gw.#probe()
    await gw.rounds.listen()
    return gw
  }

  /** Ask a Streamable HTTP upstream whether it serves 2026-07-28 (at each connection: it may have been upgraded). */
  async #probe(): Promise<void> {
    const target = modernTarget(this.#opts.spec, this.#opts.name, this.#opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, this.#opts.log)
    this.#modern = target !== undefined && (await speaksModern(target)) ? target : undefined
  }

  /** The upstream's name (its `mcpServers` key, or the command). */
  get name(): string {
    return this.#opts.name
  }

  /** Whether calls pass through in 2026-07-28 (the upstream said so when it was last connected). */
  get modern(): boolean {
    return this.#modern !== undefined
  }

  #notified(m: ServerMessage): void {
    const kinds = CHANGED[m.method]
    if (kinds !== undefined) {
      const client = this.upstream.client
      if (client !== undefined) asGateway(() => void this.lists!.sync(client, [], kinds))
    } else if (m.method === 'notifications/resources/updated') {
      const uri = String(m.params!.uri)
      for (const mcp of [this.mcp, ...this.mirrors]) {
        if (mcp !== this.mcp && !mcp.isKnownResource(uri)) continue
        void mcp.resourceUpdated(uri).catch((err: unknown) => this.#opts.log.warn({ err }, 'resources/updated not delivered'))
      }
    } else {
      // notifications/message: to the caller whose call is in flight; with none in flight, to every
      // connection that set a level (as the upstream's own clients get it); with several callers'
      // calls, it may be any one's: the log alone.
      this.#opts.log.debug({ upstream: this.#opts.name, message: m.params }, 'upstream log message')
      const { level, data, logger } = m.params as { level: LoggingLevel; data: unknown; logger?: string }
      if (this.rounds.idle()) {
        for (const mcp of [this.mcp, ...this.mirrors]) void mcp.log(level, data, logger).catch((err: unknown) => this.#opts.log.warn({ err }, 'log message not delivered'))
      }
      for (const ctx of this.rounds.callers()) relayLog(ctx, m.params!)
    }
  }

  /**
   * A handler's work: a retry answers its round where the call waits; a first call starts the
   * upstream request. A tools/call for a client that takes tasks, still running after
   * `taskAfterMs`, becomes a task (the core's runner: its result lands in the store) of `mcp`, the
   * server the call came to (this upstream's own, or a virtual server's).
   */
  async forward(ctx: RetryableContext, method: string, params: Record<string, unknown>, mcp: McpServer = this.mcp): Promise<unknown> {
    if (this.#modern !== undefined) return this.#passThrough(this.#modern, ctx, method, params)
    // The faces' contexts are CallContexts: the rounds hear their cancellation without a signal.
    const context = ctx as CallContext
    const ref = ctx.requestState as RoundRef | undefined
    if (ref !== undefined) return handlerReturn((await this.rounds.resume(ref, ctx.inputResponses ?? {}, context)) as never)
    const asTask = method === 'tools/call' && clientTakesTasks(ctx.clientCapabilities)
    const send = (abort: Cancel, call: UpstreamCall) => this.upstream.request(method, params, { abort, onprogress: progressOf(call) })
    const outcome = await this.rounds.start(context, send, asTask ? (this.#opts.taskAfterMs ?? 5000) : undefined)
    if (outcome.kind !== 'running') return handlerReturn(outcome as never)
    return this.#task(context, outcome.call, mcp)
  }

  /**
   * One round through a 2026-07-28 upstream, holding nothing here: the upstream's `requestState`
   * travels inside ours (sealed, bound to the call and the principal), so any instance takes the
   * retry and hands the caller's answers and that state back. A legacy caller is asked on
   * `/requests` by the core, which calls this again with the answers, in the same request.
   */
  async #passThrough(target: ModernTarget, ctx: RetryableContext, method: string, params: Record<string, unknown>): Promise<unknown> {
    const state = ctx.requestState as { m?: unknown } | undefined
    const sent = copyOf(params)
    if (ctx.inputResponses !== undefined) sent.inputResponses = ctx.inputResponses
    if (state?.m !== undefined) sent.requestState = state.m
    const tool = method === 'tools/call' ? this.mcp.tools.get(params.name as string) : undefined
    const headers = tool === undefined ? {} : paramHeadersFor(tool.definition.inputSchema as Record<string, unknown>, params.arguments, headerText)
    const result = await modernRound(target, ctx, method, sent, headers, {
      progress: (p) => void ctx.progress(p.progress, p.total, p.message).catch(() => undefined),
      log: (p) => relayLog(ctx, p)
    })
    const { resultType, inputRequests, requestState, ...rest } = result
    if (resultType !== 'input_required') return rest
    return inputRequired({ inputRequests: inputRequests as Record<string, InputRequest>, state: { m: requestState } })
  }

  /**
   * The call goes on as a task: its progress becomes the task's status, its questions the task's
   * `inputRequests` (answered by tasks/update), and tasks/cancel cancels the upstream request.
   */
  async #task(ctx: CallContext, call: UpstreamCall, mcp: McpServer): Promise<unknown> {
    // What the client asked for, within what this gateway keeps (as for our own tools).
    const most = this.#opts.taskTtlMs ?? 3_600_000
    const asked = ctx.requestedTask
    const options = { ttlMs: Math.min(asked?.ttl ?? most, most), pollIntervalMs: 1000, notify: asked?.notify === true }
    const task = await startTask(mcp, ctx, options, async (tc) => {
      call.ctx = tc
      // Called again by the runner with the answers to the questions the last round returned (the
      // runner sets inputResponses with requestState).
      if (tc.requestState !== undefined) call.answer(tc.inputResponses!)
      return handlerReturn((await call.next(tc, tc.clientCapabilities)) as never)
    }, (result) => result as Record<string, unknown>)
    return taskStarted(task)
  }

  completer(ref: Record<string, string>, argument: string): Completer | undefined {
    if (this.lists!.caps.completions === undefined) return undefined
    return async (value, ctx) => {
      const context = Object.keys(ctx.arguments).length === 0 ? {} : { context: { arguments: ctx.arguments } }
      const out = await this.upstream.request('completion/complete', { ref, argument: { name: argument, value }, ...context }, { signal: ctx.signal })
      return out.completion as { values: string[] }
    }
  }

  /**
   * The store as the routes see it: a subscription also subscribes the upstream (once per URI), and
   * the readiness ping fails while a required upstream of `all` is down (see {@link gatewayStore}).
   */
  wrapStore(store: Store, all: readonly Gateway[] = [this]): Store {
    return gatewayStore(store, { mcp: this.mcp, holder: '', upstreamOf: () => this }, all, this.#opts.log)
  }

  /** Subscribe the upstream to `uri` once, when it offers subscriptions, for the mount `holder`. */
  async subscribeUpstream(uri: string, holder = ''): Promise<void> {
    let holders = this.#holders.get(uri)
    if (holders === undefined) this.#holders.set(uri, (holders = new Set()))
    holders.add(holder)
    if (this.#subscribed.has(uri) || this.lists!.caps.resources?.subscribe !== true) return
    await this.upstream.request('resources/subscribe', { uri })
    this.#subscribed.add(uri)
  }

  /** The mount `holder` has `remaining` subscribers of `uri` left: with none there, nor in any other mount, unsubscribe the upstream. */
  async unsubscribeUpstream(uri: string, remaining: number, holder = ''): Promise<void> {
    if (remaining > 0) return
    const holders = this.#holders.get(uri)
    holders?.delete(holder)
    if (holders?.size !== 0) return
    this.#holders.delete(uri)
    if (!this.#subscribed.has(uri)) return
    this.#subscribed.delete(uri)
    // Ours is gone already; an upstream that cannot be told keeps sending updates nobody receives.
    await this.upstream.request('resources/unsubscribe', { uri }).catch((err: unknown) => this.#opts.log.warn({ err }, 'upstream unsubscribe failed'))
  }

  /**
   * What `before` (the gateway of the same name that a reload replaces) had the upstream subscribed
   * to for its mounts, subscribed here too: the clients' subscriptions outlive the change.
   */
  async adopt(before: Gateway): Promise<void> {
    for (const [uri, holders] of before.#holders) {
      for (const holder of holders) await this.subscribeUpstream(uri, holder).catch((err: unknown) => this.#opts.log.warn({ err, uri }, 'upstream subscribe failed'))
    }
  }

  /** Stop relaying, cancel the calls in flight, end the upstream (its child process). */
  async close(): Promise<void> {
    await this.rounds.close()
    await this.upstream.close()
  }
}
