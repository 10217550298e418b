import { errors } from '../errors.js'
import { answerRequest } from '../messaging/answers.js'
import { queueOutlet } from '../messaging/notify.js'
import { SUPPORTED_VERSIONS, LATEST_LEGACY_VERSION, era as eraOf, isSupportedVersion, type Era, type ProtocolVersion } from '../protocol.js'
import type { Implementation } from '../schema/common.js'
import type { CompleteBody, CompleteResult } from '../schema/completions.js'
import type { DiscoverResult, InitializeBody, InitializeResult, LoggingLevel } from '../schema/lifecycle.js'
import type { ClientNotifications } from '../schema/messaging.js'
import type { GetPromptBody, GetPromptResponse } from '../schema/prompts.js'
import type { ReadResourceResponse } from '../schema/resources.js'
import type { CreateTaskResult, DetailedTask } from '../schema/tasks.js'
import type { CallToolBody, CallToolResponse } from '../schema/tools.js'
import type { RetryParams } from '../mrtr/run.js'
import { StateSealer } from '../mrtr/seal.js'
import { MemoryStore } from '../store/memory.js'
import type { ClientAnswer, NotificationGroup, QueuedRequest, ServerMessage, Store } from '../store/types.js'
import { answerTask, cancelTask, findTask, requireTasks } from '../tasks/methods.js'
import { detailedTask } from '../tasks/run.js'
import type { CallContext, Outlet } from './call-context.js'
import { Cancellations } from './cancellations.js'
import { complete } from './completions.js'
import { ListCache, type Representation } from './list-cache.js'
import type { McpServerOptions } from './options.js'
import { getPrompt } from './prompts.js'
import { ListKind, Registry } from './registry.js'
import { readResource, resourceNotFound } from './resources.js'
import { finish, type CacheHints } from './results.js'
import { callTool } from './tools.js'

export type { McpServerOptions, Representation }

const LIST_CHANGED: Record<ListKind, string> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
  templates: 'notifications/resources/list_changed'
}

/** What `initialize` answers, and the session it opened (`issueSession`). */
export interface Initialized {
  result: InitializeResult & { protocolVersion: ProtocolVersion }
  sessionId?: string
}

/** Task methods: `gate` refuses a client that did not declare the Tasks extension (-32021). */
export interface TaskCallOptions {
  gate: boolean
}

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
  /** Notifications of a call queued on its connection (`GET /notifications`). */
  readonly queue: Outlet
  readonly #lists: ListCache
  readonly #clientListeners = new Set<(owner: string, notification: ServerMessage) => void>()
  // Changes made before serving (the catalogue being registered at boot) are not news to anyone.
  #serving = false

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
    this.cancellations = new Cancellations(() => this.store)
    this.queue = queueOutlet(() => this.store)
    this.#lists = new ListCache(this.pageSize, this.cacheHints)
    this.onChange((kind) => {
      this.#lists.drop(kind)
      // Every connection hears that a list changed; a failing store must not fail the registration.
      // Not before serving: an instance booting on a shared store would tell every client of the
      // others that their lists changed each time it starts.
      if (this.#serving) this.store.broadcast({ method: LIST_CHANGED[kind] }).catch(() => undefined)
    })
  }

  /** From now on a change to a list is announced to every connection (the plugin calls it when ready). */
  startServing(): void {
    this.#serving = true
  }

  /** What this server offers; the same for every client. */
  capabilities(): Record<string, unknown> {
    return {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      completions: {},
      logging: {},
      extensions: { 'io.modelcontextprotocol/tasks': {} }
    }
  }

  // ---- lifecycle ----

  /**
   * `initialize`: the requested version when supported (`legacyOnly`: a legacy one), else the newest
   * legacy one; a legacy client's capabilities are kept for its connection. `issueSession` opens a
   * session (Mcp-Session-Id), which is then the connection.
   */
  async initialize(body: InitializeBody, ctx: CallContext, options: { issueSession?: boolean; legacyOnly?: boolean } = {}): Promise<Initialized> {
    const asked = isSupportedVersion(body.protocolVersion) && !(options.legacyOnly === true && eraOf(body.protocolVersion) === 'modern')
    const protocolVersion = asked ? (body.protocolVersion as ProtocolVersion) : LATEST_LEGACY_VERSION
    const result: Initialized['result'] = { protocolVersion, capabilities: this.capabilities(), serverInfo: this.serverInfo }
    if (this.instructions !== undefined) result.instructions = this.instructions
    const out: Initialized = { result: finish(eraOf(protocolVersion), result) }
    let owner = ctx.principal.id
    if (options.issueSession === true) {
      out.sessionId = await this.store.createSession()
      owner = `session:${out.sessionId}`
    }
    if (eraOf(protocolVersion) === 'legacy') {
      await this.store.setLegacyClient(owner, { protocolVersion, capabilities: body.capabilities, clientInfo: body.clientInfo })
    }
    return out
  }

  /** Whether `Mcp-Session-Id` names a live session. */
  hasSession(id: string): Promise<boolean> {
    return this.store.hasSession(id)
  }

  /** The capabilities a legacy-era client declared in `initialize` for its connection. */
  async legacyCapabilities(owner: string): Promise<Record<string, unknown> | undefined> {
    return (await this.store.getLegacyClient(owner))?.capabilities
  }

  /** `server/discover`, serialized once per era. */
  discover(era: Era): Representation {
    return this.#lists.discover(era, () => {
      const result: DiscoverResult = { supportedVersions: [...SUPPORTED_VERSIONS], capabilities: this.capabilities(), serverInfo: this.serverInfo }
      if (this.instructions !== undefined) result.instructions = this.instructions
      // 2026-07-28 identifies the server in the result's _meta (the body field is the older form).
      if (era === 'modern') result._meta = { 'io.modelcontextprotocol/serverInfo': this.serverInfo }
      return result
    })
  }

  /** `logging/setLevel` (legacy era): the lowest level of log messages this connection gets. */
  setLogLevel(ctx: CallContext, level: LoggingLevel): Promise<void> {
    return this.store.setLogLevel(ctx.principal.id, level)
  }

  // ---- the catalogue ----

  /** One page of a list, serialized once per (list, era, page) until the list changes. */
  list(kind: ListKind, cursor: string | undefined, era: Era): Representation {
    return this.#lists.page(kind, cursor, era, () => [...this[kind].values()].map((e) => e.definition))
  }

  /** `tools/call`: the result, `input_required`, or the task it started (`resultType: 'task'`). */
  async callTool(name: string, body: CallToolBody, ctx: CallContext): Promise<CallToolResponse | CreateTaskResult> {
    return (await callTool(this, name, body, ctx)) as CallToolResponse | CreateTaskResult
  }

  async getPrompt(name: string, body: GetPromptBody, ctx: CallContext): Promise<GetPromptResponse> {
    return (await getPrompt(this, name, body, ctx)) as GetPromptResponse
  }

  async readResource(uri: string, params: RetryParams, ctx: CallContext): Promise<ReadResourceResponse> {
    return (await readResource(this, uri, params, ctx)) as ReadResourceResponse
  }

  complete(body: CompleteBody, ctx: CallContext): Promise<CompleteResult> {
    return complete(this, body, ctx)
  }

  /** Whether `uri` names a resource or matches a template (what may be subscribed to). */
  isKnownResource(uri: string): boolean {
    return this.resources.has(uri) || [...this.templates.values()].some((t) => t.template.match(uri) !== undefined)
  }

  /** `resources/subscribe`: 404 for a resource this server does not have. */
  async subscribe(ctx: CallContext, uri: string): Promise<void> {
    if (!this.isKnownResource(uri)) throw resourceNotFound(uri, ctx)
    await this.store.subscribe(ctx.principal.id, uri)
  }

  async unsubscribe(ctx: CallContext, uri: string): Promise<void> {
    await this.store.unsubscribe(ctx.principal.id, uri)
  }

  // ---- messages to and from the client ----

  /** The connection's current group of notifications, the same until acknowledged; undefined when none. */
  takeNotifications(owner: string): Promise<NotificationGroup | undefined> {
    return this.store.takeNotifications(owner)
  }

  /** Acknowledge a group handed out by {@link takeNotifications}; 404 when it is not the current one. */
  async acknowledge(owner: string, groupId: string): Promise<void> {
    if (!(await this.store.ackNotifications(owner, groupId))) throw errors.notFound(`Unknown message group: ${groupId.slice(0, 128)}`)
  }

  /** The client's notifications: cancellation aborts the request it names; the rest go to the listeners. */
  async receive(owner: string, notifications: ClientNotifications): Promise<void> {
    for (const n of notifications) {
      if (n.method === 'notifications/cancelled') {
        const id = n.params?.requestId
        if (typeof id !== 'string' && typeof id !== 'number') throw errors.invalidParams('notifications/cancelled needs params.requestId')
        await this.cancel(owner, String(id), n.params?.reason)
      } else {
        // initialized, roots/list_changed and anything newer.
        for (const l of this.#clientListeners) l(owner, n)
      }
    }
  }

  /** Abort the running request `requestId` of `owner`, on whichever instance runs it. */
  cancel(owner: string, requestId: string, reason: unknown): Promise<void> {
    return this.store.publishCancel(owner, requestId, typeof reason === 'string' ? reason.slice(0, 256) : undefined)
  }

  /** Hand out the connection's oldest waiting server-to-client request (legacy era), or undefined. */
  takeRequest(owner: string): Promise<QueuedRequest | undefined> {
    return this.store.claimRequest(owner)
  }

  /** The client's answer to a server-to-client request, checked against the question. */
  answer(owner: string, id: string, answer: ClientAnswer): Promise<void> {
    return answerRequest(this.store, owner, id, answer)
  }

  /**
   * Hear the client's notifications other than cancellation (notifications/initialized,
   * notifications/roots/list_changed, ...), with the connection they came from.
   */
  onClientNotification(listener: (owner: string, notification: ServerMessage) => void): () => void {
    this.#clientListeners.add(listener)
    return () => this.#clientListeners.delete(listener)
  }

  /**
   * Tell every connection subscribed to `uri` that the resource changed (`notifications/resources/updated`),
   * and every `subscriptions/listen` stream that asked for it, on any instance sharing the store.
   * @example mcp.resourceUpdated('demo://readme')
   */
  async resourceUpdated(uri: string): Promise<void> {
    await this.store.publishResourceUpdated(uri)
    for (const owner of await this.store.subscribers(uri)) {
      await this.store.pushNotification(owner, { method: 'notifications/resources/updated', params: { uri } })
    }
  }

  /** Hear `resourceUpdated` calls made on any instance sharing the store; returns the function that stops. */
  onResourceUpdated(listener: (uri: string) => void): () => void {
    return this.store.onResourceUpdated(listener)
  }

  // ---- tasks ----

  /** `tasks/get`: the task with its result, error or input requests; 404 when unknown or another's. */
  async getTask(ctx: CallContext, taskId: string, options: TaskCallOptions): Promise<DetailedTask> {
    if (options.gate) requireTasks(ctx)
    return { resultType: 'complete', ...detailedTask(await findTask(this.store, ctx.principal.id, taskId)) } as DetailedTask
  }

  /** `tasks/update`: answers to the task's outstanding input requests. */
  async updateTask(ctx: CallContext, taskId: string, inputResponses: Record<string, Record<string, unknown>>, options: TaskCallOptions): Promise<void> {
    if (options.gate) requireTasks(ctx)
    await answerTask(this.store, ctx.principal.id, taskId, inputResponses)
  }

  /** `tasks/cancel`: cooperative, idempotent. */
  async cancelTask(ctx: CallContext, taskId: string, options: TaskCallOptions): Promise<void> {
    if (options.gate) requireTasks(ctx)
    await cancelTask(this.store, ctx.principal.id, taskId)
  }
}
