import type { Logger } from '../core/request-context.js'
import type { Registration } from '../core/definitions.js'
import { McpServer, type McpServerOptions } from '../core/mcp-server.js'
import type { ListKind } from '../core/registry.js'
import { messageOf } from '../errors.js'
import { register, type Forwarder } from './catalogue.js'
import type { Gateway } from './gateway.js'
import { ALL_LISTS } from './lists.js'
import type { VirtualSpec } from './options.js'

/** What names an entry of each list, in its key (`server/<that>`). */
const ID: Record<ListKind, string> = { tools: 'name', prompts: 'name', resources: 'uri', templates: 'uriTemplate' }

/** A key pattern (`*`: any run of characters, `/` included) as a RegExp. */
export function keyPattern(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's')
}

const fill = (template: string, server: string, name: string): string => template.replaceAll('{server}', server).replaceAll('{name}', name)

interface Picked {
  gw: Gateway
  key: string
  id: string
  item: Record<string, unknown>
}

/**
 * A virtual server (`virtualServers` in the config file): the entries of several upstreams that its
 * patterns pick, as one catalogue of its own, served under its own mount with its own OpenAPI
 * document, docs page and store. Each entry's handler is its upstream's: a call goes to the
 * gateway of that upstream under the entry's upstream name, and a call that becomes a task is this
 * server's task. The catalogue follows the upstreams' lists (rebuilt when one of them changes), and
 * offers the capabilities any of its upstreams offers.
 */
export class VirtualServer {
  readonly mcp: McpServer
  readonly sources: readonly Gateway[]
  readonly #spec: VirtualSpec
  readonly #log: Logger
  readonly #include: RegExp[]
  readonly #exclude: RegExp[]
  readonly #scopes: [RegExp, string[]][]
  readonly #registered = new Map<ListKind, Registration[]>()
  /** Which upstream serves each resource URI and template here, by list (replaced with it). */
  readonly #owners = new Map<ListKind, Map<string, Gateway>>()
  readonly #stops: (() => void)[] = []

  constructor(spec: VirtualSpec, gateways: readonly Gateway[], server: Omit<McpServerOptions, 'name' | 'version'>, log: Logger) {
    this.#spec = spec
    this.#log = log
    this.#include = spec.include.map(keyPattern)
    this.#exclude = spec.exclude.map(keyPattern)
    this.#scopes = Object.entries(spec.scopes).map(([p, s]) => [keyPattern(p), s])
    this.mcp = new McpServer({ name: spec.name, version: '0.1.0', ...server })
    this.sources = VirtualServer.sourcesOf(spec, gateways)
    for (const gw of this.sources) {
      gw.mirrors.add(this.mcp)
      this.#stops.push(gw.mcp.onChange((kind) => this.sync(kind)))
    }
    for (const kind of ALL_LISTS) this.sync(kind)
  }

  /** The upstreams some include pattern of `spec` can pick from (by its server part, before the first `/`). */
  static sourcesOf(spec: VirtualSpec, gateways: readonly Gateway[]): Gateway[] {
    const servers = spec.include.map((p) => keyPattern(p.slice(0, p.indexOf('/'))))
    return gateways.filter((gw) => servers.some((r) => r.test(gw.name)))
  }

  /** Follow the upstreams no more (a reload replaced this server): their changes and messages are the next one's. */
  close(): void {
    for (const gw of this.sources) gw.mirrors.delete(this.mcp)
    for (const stop of this.#stops.splice(0)) stop()
  }

  /** The upstream that serves `uri` here (a resource's, or a matching template's), for subscriptions. */
  upstreamOf(uri: string): Gateway | undefined {
    const own = this.#owners.get('resources')!.get(uri)
    if (own !== undefined) return own
    for (const [template, entry] of this.mcp.templates) if (entry.template.match(uri) !== undefined) return this.#owners.get('templates')!.get(template)
    return undefined
  }

  /** Pick `kind`'s entries from the upstreams' lists again and replace this server's in one change. */
  sync(kind: ListKind): void {
    const picked: Picked[] = []
    for (const gw of this.sources) {
      for (const item of gw.lists!.items(kind)) {
        const id = String(item[ID[kind]])
        const key = `${gw.name}/${id}`
        if (this.#include.some((r) => r.test(key)) && !this.#exclude.some((r) => r.test(key))) picked.push({ gw, key, id, item })
      }
    }
    const named = kind === 'tools' || kind === 'prompts'
    const names = named ? this.#names(picked) : picked.map((p) => p.id)
    const regs: Registration[] = []
    const owners = new Map<string, Gateway>()
    this.mcp.batch(() => {
      for (const r of this.#registered.get(kind) ?? []) r.remove()
      for (const [i, p] of picked.entries()) {
        const item: Record<string, unknown> = { ...p.item, ...(named ? { name: names[i] } : {}) }
        const description = this.#spec.descriptions[p.key]
        if (description !== undefined) item.description = description
        const scopes = kind === 'tools' ? [...new Set(this.#scopes.filter(([r]) => r.test(p.key)).flatMap(([, s]) => s))] : []
        try {
          regs.push(register(this.mcp, kind, item, this.#forwarder(p.gw, p.id), scopes.length > 0 ? { scopes } : {}))
          if (!named) owners.set(p.id, p.gw)
        } catch (err) {
          // A name or URI another upstream's entry holds here already: the first one stays.
          this.#log.warn({ virtual: this.#spec.name, key: p.key, reason: messageOf(err) }, 'virtual server entry left out')
        }
      }
    })
    this.#registered.set(kind, regs)
    if (!named) this.#owners.set(kind, owners)
    this.#offer()
  }

  /** Each entry's name here: renamed, or from `names`, or its own; where names clash, `{server}_{name}` (but a rename). */
  #names(picked: readonly Picked[]): string[] {
    const { rename, names: template } = this.#spec
    const first = picked.map((p) => rename[p.key] ?? (template === undefined ? p.id : fill(template, p.gw.name, p.id)))
    const count = new Map<string, number>()
    for (const n of first) count.set(n, (count.get(n) ?? 0) + 1)
    return first.map((n, i) => (count.get(n)! > 1 && rename[picked[i]!.key] === undefined ? fill('{server}_{name}', picked[i]!.gw.name, picked[i]!.id) : n))
  }

  /** The entry's calls go to its upstream under the upstream's own name; its tasks are this server's. */
  #forwarder(gw: Gateway, original: string): Forwarder {
    const mcp = this.mcp
    return {
      forward: (ctx, method, params) => gw.forward(ctx, method, method === 'resources/read' ? params : { ...params, name: original }, mcp),
      completer: (ref, argument) => gw.completer(ref.type === 'ref/prompt' ? { ...ref, name: original } : ref, argument)
    }
  }

  /** What any upstream offers; everything while none has connected yet (as a gateway does). */
  #offer(): void {
    const caps = this.sources.map((gw) => gw.lists!.caps as Record<string, { subscribe?: boolean } | undefined>).filter((c) => Object.keys(c).length > 0)
    if (caps.length === 0) return this.mcp.offer(undefined)
    const offered: Record<string, unknown> = {}
    for (const part of ['tools', 'prompts', 'completions', 'logging']) if (caps.some((c) => c[part] !== undefined)) offered[part] = {}
    if (caps.some((c) => c.resources !== undefined)) offered.resources = { subscribe: caps.some((c) => c.resources?.subscribe === true) }
    this.mcp.offer(offered)
  }
}
