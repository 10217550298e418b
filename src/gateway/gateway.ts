import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Logger } from '../core/request-context.js'
import type { Completer, Registration, RetryableContext } from '../core/definitions.js'
import { McpServer, type McpServerOptions } from '../core/mcp-server.js'
import { ListKind } from '../core/registry.js'
import { messageOf } from '../errors.js'
import type { ServerMessage, Store } from '../store/types.js'
import type { RoundRef } from './call.js'
import { handlerReturn, progressOf, register, relayLog, type Forwarder } from './catalogue.js'
import type { RoundRelay } from './relay.js'
import { Rounds } from './rounds.js'
import { gatewayStore } from './store.js'
import { Upstream, type UpstreamOptions, type UpstreamSpec } from './upstream.js'

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
}

const LISTS: [ListKind, string, string, string][] = [
  ['tools', 'tools/list', 'tools', 'tools'],
  ['prompts', 'prompts/list', 'prompts', 'prompts'],
  ['resources', 'resources/list', 'resources', 'resources'],
  ['templates', 'resources/templates/list', 'resourceTemplates', 'resources']
]
const MAX_ITEMS = 10_000
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
  readonly #opts: GatewayOptions
  readonly #registered = new Map<ListKind, { text: string; regs: Registration[] }>()
  readonly #subscribed = new Set<string>()

  private constructor(opts: GatewayOptions) {
    this.#opts = opts
    this.required = opts.required ?? true
    this.rounds = new Rounds(opts.instance, opts.relay, opts.server.stateTtlMs ?? 15 * 60_000, opts.log)
    this.upstream = new Upstream(opts.spec, opts, {
      connected: (client) => void this.#sync(client),
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
      ...(client?.getInstructions() === undefined ? {} : { instructions: client.getInstructions()! }),
      ...opts.server
    })
    if (client !== undefined) await gw.#sync(client)
    await gw.rounds.listen()
    return gw
  }

  /** Fetch every list the upstream offers and replace ours where it changed. */
  async #sync(client: Client, kinds: readonly ListKind[] = ['tools', 'prompts', 'resources', 'templates']): Promise<void> {
    // During start the catalogue is made once the first connection is up; later connections resync.
    if (this.mcp === undefined) return
    const caps = client.getServerCapabilities() ?? {}
    try {
      if (caps.logging !== undefined) await this.upstream.request('logging/setLevel', { level: 'debug' })
      for (const uri of this.#subscribed) await this.upstream.request('resources/subscribe', { uri })
      for (const [kind, method, field, capability] of LISTS) {
        if (!kinds.includes(kind)) continue
        const items = caps[capability as keyof typeof caps] === undefined ? [] : await this.#fetch(method, field)
        this.#replace(kind, items)
      }
    } catch (err) {
      this.#opts.log.error({ err, upstream: this.#opts.name }, 'upstream lists could not be fetched')
    }
  }

  async #fetch(method: string, field: string): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = []
    let cursor: unknown
    do {
      const page = await this.upstream.request(method, cursor === undefined ? {} : { cursor })
      items.push(...((page[field] as Record<string, unknown>[] | undefined) ?? []))
      cursor = page.nextCursor
    } while (typeof cursor === 'string' && items.length < MAX_ITEMS)
    return items.slice(0, MAX_ITEMS)
  }

  #replace(kind: ListKind, items: Record<string, unknown>[]): void {
    const text = JSON.stringify(items)
    const before = this.#registered.get(kind)
    if (before?.text === text) return
    const regs: Registration[] = []
    this.mcp.batch(() => {
      for (const r of before?.regs ?? []) r.remove()
      for (const item of items) {
        try {
          regs.push(register(this.mcp, kind, item, this))
        } catch (err) {
          this.#opts.log.warn({ upstream: this.#opts.name, kind, item: item.name ?? item.uri ?? item.uriTemplate, reason: messageOf(err) }, 'upstream entry left out')
        }
      }
    })
    this.#registered.set(kind, { text, regs })
  }

  #notified(m: ServerMessage): void {
    const kinds = CHANGED[m.method]
    if (kinds !== undefined) {
      if (this.upstream.client !== undefined) void this.#sync(this.upstream.client, kinds)
    } else if (m.method === 'notifications/resources/updated') {
      void this.mcp.resourceUpdated(String(m.params!.uri)).catch((err: unknown) => this.#opts.log.warn({ err }, 'resources/updated not delivered'))
    } else {
      // notifications/message: to the caller whose call is in flight, else the log alone.
      this.#opts.log.debug({ upstream: this.#opts.name, message: m.params }, 'upstream log message')
      for (const ctx of this.rounds.callers()) relayLog(ctx, m.params!)
    }
  }

  async forward(ctx: RetryableContext, method: string, params: Record<string, unknown>): Promise<unknown> {
    const ref = ctx.requestState as RoundRef | undefined
    const outcome =
      ref === undefined
        ? await this.rounds.start(ctx, (signal, call) => this.upstream.request(method, params, { signal, onprogress: progressOf(call) }))
        : await this.rounds.resume(ref, ctx.inputResponses ?? {}, ctx)
    return handlerReturn(outcome as never)
  }

  completer(ref: Record<string, string>, argument: string): Completer | undefined {
    if (this.upstream.client?.getServerCapabilities()?.completions === undefined) return undefined
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
    return gatewayStore(store, this, all)
  }

  /** Subscribe the upstream to `uri` once, when it offers subscriptions. */
  async subscribeUpstream(uri: string): Promise<void> {
    if (this.#subscribed.has(uri) || this.upstream.client?.getServerCapabilities()?.resources?.subscribe !== true) return
    await this.upstream.request('resources/subscribe', { uri })
    this.#subscribed.add(uri)
  }

  /** Unsubscribe the upstream from `uri` when nobody is subscribed any more. */
  async unsubscribeUpstream(uri: string, remaining: number): Promise<void> {
    if (!this.#subscribed.has(uri) || remaining > 0) return
    this.#subscribed.delete(uri)
    // Ours is gone already; an upstream that cannot be told keeps sending updates nobody receives.
    await this.upstream.request('resources/unsubscribe', { uri }).catch((err: unknown) => this.#opts.log.warn({ err }, 'upstream unsubscribe failed'))
  }

  /** Stop relaying, cancel the calls in flight, end the upstream (its child process). */
  async close(): Promise<void> {
    await this.rounds.close()
    await this.upstream.close()
  }
}
