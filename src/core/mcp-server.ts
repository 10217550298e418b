import { errors } from '../errors.js'
import type { Era } from '../protocol.js'
import { SUPPORTED_VERSIONS, LATEST_LEGACY_VERSION, era as eraOf, isSupportedVersion, type ProtocolVersion } from '../protocol.js'
import type { Implementation } from '../schema/common.js'
import type { CompleteBody, CompleteResult } from '../schema/completions.js'
import type { DiscoverResult, InitializeBody, InitializeResult } from '../schema/lifecycle.js'
import type { GetPromptBody } from '../schema/prompts.js'
import type { CallToolBody } from '../schema/tools.js'
import { complete } from './completions.js'
import type { RequestContext } from './context.js'
import type { RetryParams } from '../mrtr/run.js'
import { StateSealer, type StateKey } from '../mrtr/seal.js'
import { MemoryStore } from '../store/memory.js'
import type { ServerMessage, Store } from '../store/types.js'
import { etagOf } from './etag.js'
import { decodeCursor, encodeCursor } from './pagination.js'
import { getPrompt } from './prompts.js'
import { ListKind, Registry } from './registry.js'
import { readResource } from './resources.js'
import { finish, finishCacheable, type CacheHints } from './results.js'
import { callTool } from './tools.js'

export interface McpServerOptions {
  /** `serverInfo` of `/initialize` and `/discover`. */
  name: string
  version: string
  title?: string
  description?: string
  /** Guidance for the model on how to use this server. */
  instructions?: string
  /** Items per page of every list (default 100). */
  pageSize?: number
  /** Cache hints of lists, reads and discover in 2026-07-28 (default `{ ttlMs: 0, cacheScope: 'private' }`). */
  cacheHints?: Partial<CacheHints>
  /**
   * Keys that seal `requestState` (`kid:base64url-32-bytes,...`, the first seals; or parsed keys).
   * Every instance behind one load balancer needs the same ring. Default: an ephemeral key.
   */
  stateKeys?: string | readonly StateKey[]
  /** How long a client has to answer before its `requestState` expires (default 15 minutes). */
  stateTtlMs?: number
  /** Largest `requestState` accepted, in bytes (default 32 KiB). */
  maxStateBytes?: number
  /** Shared state: connections, queues, subscriptions (default: an in-memory {@link MemoryStore}). */
  store?: Store
  /** How long a legacy-era question waits on `/requests` for the client's answer (default 5 minutes). */
  answerTimeoutMs?: number
  /** The time a request may take before long work should return a resumable part (`ctx.deadline`; default 30 s). */
  maxRequestMs?: number
}

/** A representation prepared once and served many times: the JSON text and its ETag. */
export interface Representation {
  readonly body: string
  /**
   * The body as UTF-8, when it is served many times (cached lists and discover): sent as is, where a
   * string would be measured and encoded again on every request (a 200-tool list is ~90 KB).
   */
  readonly bytes?: Buffer
  readonly etag: string
}

const LIST_CHANGED: Record<ListKind, string> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
  templates: 'notifications/resources/list_changed'
}

const LIST_FIELD: Record<ListKind, string> = {
  tools: 'tools',
  prompts: 'prompts',
  resources: 'resources',
  templates: 'resourceTemplates'
}

/**
 * The transport-independent MCP server: the catalogue (see {@link Registry}) and one method per MCP
 * request. The Pure HTTP routes and the JSON-RPC face both call these; neither holds protocol logic.
 */
export class McpServer extends Registry {
  readonly serverInfo: Implementation
  readonly instructions: string | undefined
  readonly pageSize: number
  readonly cacheHints: CacheHints
  /** Seals and opens `requestState` (and later resume tokens). */
  readonly sealer: StateSealer
  /** Where connections, queues and subscriptions live; replaceable until the server starts serving. */
  store: Store
  readonly answerTimeoutMs: number
  readonly maxRequestMs: number
  // Serialized list pages by list, era and offset, dropped when their list changes; discover by era.
  // Nested maps, not one keyed by a string: a hit builds no key (lists are the most read answers).
  readonly #pages = new Map<ListKind, Record<Era, Map<number, Representation>>>()
  readonly #discover = new Map<Era, Representation>()
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
    this.onChange((kind) => {
      this.#pages.delete(kind)
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

  /** `initialize`: the requested version when supported, else the newest legacy one. */
  initialize(body: InitializeBody): InitializeResult & { protocolVersion: ProtocolVersion } {
    const protocolVersion = isSupportedVersion(body.protocolVersion) ? body.protocolVersion : LATEST_LEGACY_VERSION
    const result: InitializeResult & { protocolVersion: ProtocolVersion } = {
      protocolVersion,
      capabilities: this.capabilities(),
      serverInfo: this.serverInfo
    }
    if (this.instructions !== undefined) result.instructions = this.instructions
    return finish(eraOf(protocolVersion), result)
  }

  /** `server/discover`, serialized once per era. */
  discover(era: Era): Representation {
    const cached = this.#discover.get(era)
    if (cached !== undefined) return cached
    const result: DiscoverResult = {
      supportedVersions: [...SUPPORTED_VERSIONS],
      capabilities: this.capabilities(),
      serverInfo: this.serverInfo
    }
    if (this.instructions !== undefined) result.instructions = this.instructions
    // 2026-07-28 identifies the server in the result's _meta (the body field is the older form).
    if (era === 'modern') result._meta = { 'io.modelcontextprotocol/serverInfo': this.serverInfo }
    const rep = represent(finishCacheable(era, result, this.cacheHints))
    this.#discover.set(era, rep)
    return rep
  }

  /** One page of a list, serialized once per (list, era, page) until the list changes. */
  list(kind: ListKind, cursor: string | undefined, era: Era): Representation {
    const offset = decodeCursor(kind, cursor)
    let eras = this.#pages.get(kind)
    if (eras === undefined) this.#pages.set(kind, (eras = { legacy: new Map(), modern: new Map() }))
    const cached = eras[era].get(offset)
    if (cached !== undefined) return cached
    const all = [...this[kind].values()]
    if (offset > all.length) throw errors.invalidParams('Invalid cursor')
    const end = offset + this.pageSize
    const result: Record<string, unknown> = { [LIST_FIELD[kind]]: all.slice(offset, end).map((e) => e.definition) }
    if (end < all.length) result.nextCursor = encodeCursor(kind, end)
    const rep = represent(finishCacheable(era, result, this.cacheHints))
    eras[era].set(offset, rep)
    return rep
  }

  callTool(name: string, body: CallToolBody, ctx: RequestContext): Promise<Record<string, unknown>> {
    return callTool(this, name, body, ctx)
  }

  getPrompt(name: string, body: GetPromptBody, ctx: RequestContext): Promise<Record<string, unknown>> {
    return getPrompt(this, name, body, ctx)
  }

  readResource(uri: string, params: RetryParams, ctx: RequestContext): Promise<Record<string, unknown>> {
    return readResource(this, uri, params, ctx)
  }

  complete(body: CompleteBody, ctx: RequestContext): Promise<CompleteResult> {
    return complete(this, body, ctx)
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

  /**
   * Hear `resourceUpdated` calls made on any instance sharing the store (through it: call this once
   * the store is final, as the transports do per stream); returns the function that stops listening.
   */
  onResourceUpdated(listener: (uri: string) => void): () => void {
    return this.store.onResourceUpdated(listener)
  }

  /**
   * Hear the client's notifications other than cancellation (notifications/initialized,
   * notifications/roots/list_changed, ...), with the connection they came from.
   */
  onClientNotification(listener: (owner: string, notification: ServerMessage) => void): () => void {
    this.#clientListeners.add(listener)
    return () => this.#clientListeners.delete(listener)
  }

  /** @internal Called by the transports for each client notification. */
  clientNotified(owner: string, notification: ServerMessage): void {
    for (const l of this.#clientListeners) l(owner, notification)
  }
}

/** A result served many times, serialized once: its text, its bytes and its ETag. */
function represent(result: object): Representation {
  const body = JSON.stringify(result)
  return { body, bytes: Buffer.from(body), etag: etagOf(body) }
}
