import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Logger } from '../core/request-context.js'
import type { Registration } from '../core/definitions.js'
import type { McpServer } from '../core/mcp-server.js'
import type { ListKind } from '../core/registry.js'
import { messageOf } from '../errors.js'
import { register, type Forwarder } from './catalogue.js'
import type { Upstream } from './upstream.js'

type Capabilities = NonNullable<ReturnType<Client['getServerCapabilities']>>

/** Each list: its method, the result's field, the capability that offers it, and what names an entry. */
const LISTS: [ListKind, string, string, keyof Capabilities, string][] = [
  ['tools', 'tools/list', 'tools', 'tools', 'name'],
  ['prompts', 'prompts/list', 'prompts', 'prompts', 'name'],
  ['resources', 'resources/list', 'resources', 'resources', 'uri'],
  ['templates', 'resources/templates/list', 'resourceTemplates', 'resources', 'uriTemplate']
]
/** An upstream that pages without end stops here (per list). */
export const MAX_ITEMS = 10_000
export const ALL_LISTS: readonly ListKind[] = ['tools', 'prompts', 'resources', 'templates']

/**
 * The upstream's lists as entries of `mcp`: fetched at each connection (every page) and again when
 * the upstream says `list_changed`, each list replaced in one change when its text differs.
 */
export class UpstreamLists {
  /** The capabilities of the upstream's current connection. */
  caps: Capabilities = {}
  readonly #registered = new Map<ListKind, { text: string; regs: Registration[]; items: readonly Record<string, unknown>[] }>()

  constructor(
    readonly mcp: McpServer,
    readonly upstream: Upstream,
    readonly fw: Forwarder,
    readonly log: Logger
  ) {}

  /**
   * A connection is ready (or a list changed): offer what the upstream offers, ask for every log
   * level, subscribe the upstream again to `subscribed`, fetch `kinds`. A failure is logged; the lists served stay as they were.
   */
  async sync(client: Client, subscribed: Iterable<string>, kinds: readonly ListKind[] = ALL_LISTS): Promise<void> {
    this.caps = client.getServerCapabilities()!
    // Its capabilities are ours: what it lacks is -32601 here too, as it answers called directly.
    this.mcp.offer(this.caps)
    try {
      if (this.caps.logging !== undefined) await this.upstream.request('logging/setLevel', { level: 'debug' })
      for (const uri of subscribed) await this.upstream.request('resources/subscribe', { uri })
      for (const [kind, method, field, capability, key] of LISTS) {
        if (!kinds.includes(kind)) continue
        const items = this.caps[capability] === undefined ? [] : await this.#fetch(method, field)
        this.#replace(kind, items, key)
      }
    } catch (err) {
      this.log.error({ err, upstream: this.upstream.name }, 'upstream lists could not be fetched')
    }
  }

  /** A list as the upstream last gave it (what virtual servers pick their entries from). */
  items(kind: ListKind): readonly Record<string, unknown>[] {
    return this.#registered.get(kind)?.items ?? []
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

  #replace(kind: ListKind, items: Record<string, unknown>[], key: string): void {
    const text = JSON.stringify(items)
    const before = this.#registered.get(kind)
    if (before?.text === text) return
    const regs: Registration[] = []
    // Before the change is announced: the virtual servers that hear it read the new items.
    this.#registered.set(kind, { text, regs, items })
    this.mcp.batch(() => {
      for (const r of before?.regs ?? []) r.remove()
      for (const item of items) {
        try {
          regs.push(register(this.mcp, kind, item, this.fw))
        } catch (err) {
          this.log.warn({ upstream: this.upstream.name, kind, item: item[key], reason: messageOf(err) }, 'upstream entry left out')
        }
      }
    })
  }
}
