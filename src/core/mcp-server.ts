// Past ~8 KB on purpose: one method per MCP step, so that the whole protocol surface is read in one
// place; the logic of each step lives in the module it calls (lifecycle, tools, messages, tasks, ...).
import type { Logger } from './request-context.js'
import { TaskLeases } from '../tasks/leases.js'
import { queueOutlet } from '../messaging/notify.js'
import type { Era } from '../protocol.js'
import type { Implementation } from '../schema/common.js'
import type { CompleteBody, CompleteResult } from '../schema/completions.js'
import type { InitializeBody, LoggingLevel } from '../schema/lifecycle.js'
import type { GetPromptBody, GetPromptResponse } from '../schema/prompts.js'
import type { ReadResourceResponse } from '../schema/resources.js'
import type { CreateTaskResult } from '../schema/tasks.js'
import type { CallToolBody, CallToolResponse } from '../schema/tools.js'
import type { RetryParams } from '../mrtr/rounds.js'
import { StateSealer } from '../mrtr/seal.js'
import { MemoryStore } from '../store/memory.js'
import type { ServerMessage, Store } from '../store/types.js'
import { Messages } from '../messaging/messages.js'
import { Tasks } from '../tasks/task-methods.js'
import type { CallContext, Outlet } from './call-context.js'
import { Cancellations } from './cancellations.js'
import { complete } from './completions.js'
import { LIST_CHANGED, ListCache, type Representation } from './list-cache.js'
import type { McpServerOptions } from './options.js'
import { getPrompt } from './prompts.js'
import { ListKind, Registry } from './registry.js'
import { readResource, resourceNotFound } from './resources.js'
import type { CacheHints } from './results.js'
import { ALL_OFFERED, capabilitiesOf, discoverResult, offersOf, type Offers, initialize, type InitializeOptions, type Initialized } from './lifecycle.js'
import { callTool } from './tools.js'
import { UI_EXTENSION, UI_MIME_TYPE } from './apps.js'
import type { MaybePromise } from './maybe-promise.js'

export type { Initialized, McpServerOptions, Representation }

/**
 * The protocol core: the catalogue (see {@link Registry}) and one method per MCP step, the only way
 * to the store. The faces (Pure HTTP routes in routes/, JSON-RPC in src/jsonrpc/) translate their
 * wire into these calls and the results back; see docs/architecture.md.
 */
export class McpServer extends Registry {
  readonly serverInfo: Implementation
  readonly instructions: string | undefined
  readonly pageSize: number
  readonly cacheHints: CacheHints
  /** Seals and opens `requestState` and resume tokens. */
  readonly sealer: StateSealer
  /** Where connections, queues and tasks live; replaceable until the server starts serving. */
  store: Store
  readonly answerTimeoutMs: number
  readonly maxRequestMs: number
  /** Running calls and tasks by owner and id, for notifications/cancelled and tasks/cancel on any instance. */
  readonly cancellations: Cancellations
  /** Leases of the tasks running here: a task whose instance dies is reported failed, not left working. */
  readonly taskLeases: TaskLeases
  /** Notifications of a call queued on its connection (`GET /notifications`). */
  readonly queue: Outlet
  /** Notifications and server-to-client requests outside a call's answer. */
  readonly messages: Messages
  /** The Tasks extension's methods. */
  readonly tasks: Tasks
  /** The parts of the protocol offered: all, unless {@link offer} narrowed them (read by the method table). */
  offers: Offers = ALL_OFFERED
  // Whether the capabilities passed to offer() declare the MCP Apps extension.
  #appsOffered = false
  // Whether a resource or template of the catalogue is a view; undefined: to be found again (the
  // lists changed). Found when asked, not at each change: a boot registering 10,000 resources one
  // by one would scan them all 10,000 times.
  #hasViews: boolean | undefined = false
  readonly #lists: ListCache
  // Changes made before serving (the catalogue being registered at boot) are not news to anyone.
  #serving = false
  // How many apps serve this server (startServing less stopServing).
  #apps = 0

  constructor(options: McpServerOptions) {
    super()
    this.serverInfo = { name: options.name, version: options.version }
    if (options.title !== undefined) this.serverInfo.title = options.title
    if (options.description !== undefined) this.serverInfo.description = options.description
    this.instructions = options.instructions
    this.pageSize = options.pageSize ?? 100
    this.cacheHints = { ttlMs: 0, cacheScope: 'private', ...options.cacheHints }
    const keys = typeof options.stateKeys === 'string' ? StateSealer.parseKeys(options.stateKeys) : options.stateKeys
    this.sealer = new StateSealer(keys, { ttlMs: options.stateTtlMs ?? 15 * 60_000, maxBytes: options.maxStateBytes ?? 32 * 1024 })
    this.store = options.store ?? new MemoryStore()
    this.answerTimeoutMs = options.answerTimeoutMs ?? 300_000
    this.maxRequestMs = options.maxRequestMs ?? 30_000
    this.cancellations = new Cancellations(() => this.store.signals)
    this.taskLeases = new TaskLeases(() => this.store, options.taskLeaseMs ?? 60_000)
    this.queue = queueOutlet(() => this.store)
    this.messages = new Messages(() => this.store)
    this.tasks = new Tasks(() => this.store, this.taskLeases)
    this.#lists = new ListCache(this.pageSize, this.cacheHints)
    this.onChange((kind) => {
      this.#lists.drop(kind)
      // The capabilities name the Apps extension while a view is registered (see capabilities()).
      if (kind === 'resources' || kind === 'templates') {
        this.#hasViews = undefined
        this.#lists.dropDiscover()
      }
      // Every connection hears that a list changed; a failing store must not fail the registration.
      // Not before serving: an instance booting on a shared store would tell every client of the
      // others that their lists changed each time it starts.
      if (this.#serving) this.store.mailbox.broadcast({ method: LIST_CHANGED[kind] }).catch(() => undefined)
    })
  }

  /**
   * From now on a change to a list is announced to every connection, and tasks whose instance
   * stopped are swept for (see {@link TaskLeases}); the plugin calls it when ready.
   */
  startServing(log: Logger): void {
    if (this.#apps++ > 0) return
    this.#serving = true
    this.taskLeases.startSweeping(log)
  }

  /**
   * Stop what {@link startServing} started (the plugin calls it on close), once the last app that
   * serves this server closes: a gateway's reload serves it from the next app before the last closes.
   */
  async stopServing(): Promise<void> {
    if (this.#apps > 0 && --this.#apps > 0) return
    this.#serving = false
    await this.taskLeases.stopSweeping()
    this.cancellations.close()
  }

  /** What this server offers; the same for every client. */
  capabilities(): Record<string, unknown> {
    const caps = capabilitiesOf(this.offers)
    // SEP-1865 defines the extension's settings for clients only (`mimeTypes`); a server with views
    // (or a gateway whose upstream declares it) declares the same, so that a host knows before
    // reading any tool that there is a view to show. Views are resources: none without resources/read.
    const isView = (e: { definition: { mimeType?: string } }) => e.definition.mimeType === UI_MIME_TYPE
    this.#hasViews ??= [...this.resources.values()].some(isView) || [...this.templates.values()].some(isView)
    if ((this.#appsOffered || this.#hasViews) && this.offers.resources) {
      ;(caps.extensions as Record<string, unknown>)[UI_EXTENSION] = { mimeTypes: [UI_MIME_TYPE] }
    }
    return caps
  }

  /**
   * Offer only the parts that `capabilities` (an MCP capabilities object: a gateway's upstream's)
   * has; the methods of the others answer -32601 on both faces. Undefined: everything again.
   * @example mcp.offer({ tools: {} }) // no prompts, resources, completions or logging
   */
  offer(capabilities: Record<string, unknown> | undefined): void {
    this.offers = capabilities === undefined ? ALL_OFFERED : offersOf(capabilities)
    // An upstream that declares MCP Apps may serve views it does not list (SEP-1865 allows it).
    this.#appsOffered = (capabilities?.extensions as Record<string, unknown> | undefined)?.[UI_EXTENSION] !== undefined
    this.#lists.dropDiscover()
  }

  // ---- lifecycle ----

  /**
   * `initialize`: the requested version when supported (`legacyOnly`: a legacy one), else the newest
   * legacy one; a legacy client's capabilities are kept for its connection. `issueSession` opens a
   * session (Mcp-Session-Id), which is then the connection.
   */
  initialize(body: InitializeBody, ctx: CallContext, options: InitializeOptions = {}): Promise<Initialized> {
    return initialize(this, body, ctx, options)
  }

  /** Whether `Mcp-Session-Id` names a live session. */
  hasSession(id: string): Promise<boolean> {
    return this.store.connections.hasSession(id)
  }

  /** The capabilities a legacy-era client declared in `initialize` for its connection. */
  async legacyCapabilities(owner: string): Promise<Record<string, unknown> | undefined> {
    return (await this.store.connections.getLegacyClient(owner))?.capabilities
  }

  /** `server/discover`, serialized once per era. */
  discover(era: Era): Representation {
    return this.#lists.discover(era, () => discoverResult(this, era))
  }

  /** `logging/setLevel` (legacy era): the lowest level of log messages this connection gets. */
  setLogLevel(ctx: CallContext, level: LoggingLevel): Promise<void> {
    return this.store.connections.setLogLevel(ctx.principal.id, level)
  }

  // ---- the catalogue ----

  /** One page of a list, serialized once per (list, era, page) until the list changes. */
  list(kind: ListKind, cursor: string | undefined, era: Era): Representation {
    return this.#lists.page(kind, cursor, era, () => [...this[kind].values()].map((e) => e.definition))
  }

  /**
   * `tools/call`: the result, `input_required`, or the task it started (`resultType: 'task'`). A
   * value when the tool answered at once, else a promise: `await` it either way (see MaybePromise).
   */
  callTool(name: string, body: CallToolBody, ctx: CallContext): MaybePromise<CallToolResponse | CreateTaskResult> {
    return callTool(this, name, body, ctx) as MaybePromise<CallToolResponse | CreateTaskResult>
  }

  getPrompt(name: string, body: GetPromptBody, ctx: CallContext): Promise<GetPromptResponse> {
    return getPrompt(this, name, body, ctx) as Promise<GetPromptResponse>
  }

  readResource(uri: string, params: RetryParams, ctx: CallContext): Promise<ReadResourceResponse> {
    return readResource(this, uri, params, ctx) as Promise<ReadResourceResponse>
  }

  complete(body: CompleteBody, ctx: CallContext): Promise<CompleteResult> {
    return complete(this, body, ctx)
  }

  /** Whether `uri` names a resource or matches a template (what may be subscribed to). */
  isKnownResource(uri: string): boolean {
    return this.servesResource(uri)
  }

  /** `resources/subscribe`: 404 for a resource this server does not have. */
  async subscribe(ctx: CallContext, uri: string): Promise<void> {
    if (!this.isKnownResource(uri)) throw resourceNotFound(uri, ctx)
    await this.store.connections.subscribe(ctx.principal.id, uri)
  }

  async unsubscribe(ctx: CallContext, uri: string): Promise<void> {
    await this.store.connections.unsubscribe(ctx.principal.id, uri)
  }

  /**
   * Tell every connection subscribed to `uri` that the resource changed (`notifications/resources/updated`),
   * and every `subscriptions/listen` stream that asked for it, on any instance sharing the store.
   * @example mcp.resourceUpdated('demo://readme')
   */
  async resourceUpdated(uri: string): Promise<void> {
    await this.store.signals.publishResourceUpdated(uri)
    for (const owner of await this.store.connections.subscribers(uri)) {
      await this.store.mailbox.pushNotification(owner, { method: 'notifications/resources/updated', params: { uri } })
    }
  }

  /**
   * A log message outside any request (`notifications/message`): queued for every connection whose
   * level (`logging/setLevel`, `POST /logLevel`) takes `level`, on any instance sharing the store. In a
   * handler, `ctx.sendLog` is the request's own. 2026-07-28 has no channel for it (its log level is a
   * request's).
   * @example await mcp.log('warning', { disk: '92% full' }, 'monitor')
   */
  async log(level: LoggingLevel, data: unknown, logger?: string): Promise<void> {
    const params: Record<string, unknown> = { level, data }
    if (logger !== undefined) params.logger = logger
    for (const owner of await this.store.connections.loggers(level)) {
      await this.store.mailbox.pushNotification(owner, { method: 'notifications/message', params })
    }
  }

  /**
   * Hear the client's notifications other than cancellation (notifications/initialized,
   * notifications/roots/list_changed, ...), with the connection they came from.
   */
  onClientNotification(listener: (owner: string, notification: ServerMessage) => void): () => void {
    return this.messages.onClientNotification(listener)
  }

  /** Hear `resourceUpdated` calls made on any instance sharing the store; returns the function that stops. */
  onResourceUpdated(listener: (uri: string) => void): () => void {
    return this.store.signals.onResourceUpdated(listener)
  }

  /**
   * What a catalogue does when a URI gains its first watcher in this process or loses its last (a
   * `subscriptions/listen` stream that asked for it): a gateway subscribes its upstream then, as
   * for a connection's `resources/subscribe`. Unset: nothing.
   */
  resourceWatch: { first(uri: string): void; last(uri: string): void } | undefined
  readonly #watchers = new Map<string, number>()

  /**
   * Watch `uris` from this process (a `subscriptions/listen` stream): `listener` hears their
   * updates, and {@link resourceWatch} hears of each URI's first and last watcher. Returns the
   * function that stops.
   */
  watchResources(uris: ReadonlySet<string>, listener: (uri: string) => void): () => void {
    for (const uri of uris) {
      const n = this.#watchers.get(uri) ?? 0
      this.#watchers.set(uri, n + 1)
      if (n === 0) this.resourceWatch?.first(uri)
    }
    const stop = this.onResourceUpdated((uri) => {
      if (uris.has(uri)) listener(uri)
    })
    return () => {
      stop()
      for (const uri of uris) {
        const n = this.#watchers.get(uri)! - 1
        if (n > 0) this.#watchers.set(uri, n)
        else {
          this.#watchers.delete(uri)
          this.resourceWatch?.last(uri)
        }
      }
    }
  }

  /** How many watchers `uri` has in this process (see {@link watchResources}). */
  watching(uri: string): number {
    return this.#watchers.get(uri) ?? 0
  }
}
