import type { Era } from '../protocol.js'
import { errors } from '../errors.js'
import { etagOf } from './etag.js'
import { decodeCursor, encodeCursor } from './pagination.js'
import type { ListKind } from './registry.js'
import { finishCacheable, type CacheHints } from './results.js'

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

/** The notification that tells clients a list changed. */
export const LIST_CHANGED: Record<ListKind, string> = {
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
 * Serialized list pages by list, era and offset, dropped when their list changes; discover by era.
 * Nested maps, not one keyed by a string: a hit builds no key (lists are the most read answers).
 */
export class ListCache {
  readonly #pages = new Map<ListKind, Record<Era, Map<number, Representation>>>()
  readonly #discover = new Map<Era, Representation>()

  constructor(
    readonly pageSize: number,
    readonly hints: CacheHints
  ) {}

  /** One page of a list (`all` gives the definitions, asked for only on a miss). */
  page(kind: ListKind, cursor: string | undefined, era: Era, all: () => readonly object[]): Representation {
    const offset = decodeCursor(kind, cursor)
    let eras = this.#pages.get(kind)
    if (eras === undefined) this.#pages.set(kind, (eras = { legacy: new Map(), modern: new Map() }))
    const cached = eras[era].get(offset)
    if (cached !== undefined) return cached
    const items = all()
    if (offset > items.length) throw errors.invalidParams('Invalid cursor')
    const end = offset + this.pageSize
    const result: Record<string, unknown> = { [LIST_FIELD[kind]]: items.slice(offset, end) }
    if (end < items.length) result.nextCursor = encodeCursor(kind, end)
    const rep = represent(finishCacheable(era, result, this.hints))
    eras[era].set(offset, rep)
    return rep
  }

  /** `server/discover`, serialized once per era. */
  discover(era: Era, build: () => Record<string, unknown>): Representation {
    const cached = this.#discover.get(era)
    if (cached !== undefined) return cached
    const rep = represent(finishCacheable(era, build(), this.hints))
    this.#discover.set(era, rep)
    return rep
  }

  /** The capabilities changed: discover is built again when next asked for. */
  dropDiscover(): void {
    this.#discover.clear()
  }

  /** A list changed: its pages are built again when next asked for. */
  drop(kind: ListKind): void {
    this.#pages.delete(kind)
  }
}

/** A result served many times, serialized once: its text, its bytes and its ETag. */
function represent(result: object): Representation {
  const body = JSON.stringify(result)
  return { body, bytes: Buffer.from(body), etag: etagOf(body) }
}
