import { McpError, ErrorCode } from '../errors.js'
import type { LoggingLevel } from '../schema/lifecycle.js'
import type { LegacyClient, Store, StoreLimits } from './types.js'

interface Connection {
  logLevel?: LoggingLevel
  subscriptions: Set<string>
  legacyClient?: LegacyClient
}

/** The embedded default {@link Store}: one process, bounded, lost on restart. */
export class MemoryStore implements Store {
  readonly #connections = new Map<string, Connection>()
  readonly #limits: StoreLimits

  constructor(limits: Partial<StoreLimits> = {}) {
    this.#limits = { maxSubscriptions: 1000, maxConnections: 10000, ...limits }
  }

  async setLogLevel(owner: string, level: LoggingLevel): Promise<void> {
    this.#connection(owner).logLevel = level
  }

  async getLogLevel(owner: string): Promise<LoggingLevel | undefined> {
    return this.#connections.get(owner)?.logLevel
  }

  async subscribe(owner: string, uri: string): Promise<boolean> {
    const subs = this.#connection(owner).subscriptions
    if (subs.has(uri)) return false
    if (subs.size >= this.#limits.maxSubscriptions) {
      // A quota, not a rate: waiting does not help, unsubscribing does.
      throw new McpError(ErrorCode.invalidParams, `Too many subscriptions (limit ${this.#limits.maxSubscriptions}): unsubscribe first`, 400)
    }
    subs.add(uri)
    return true
  }

  async unsubscribe(owner: string, uri: string): Promise<boolean> {
    return this.#connections.get(owner)?.subscriptions.delete(uri) ?? false
  }

  async subscriptions(owner: string): Promise<string[]> {
    return [...(this.#connections.get(owner)?.subscriptions ?? [])]
  }

  async setLegacyClient(owner: string, client: LegacyClient): Promise<void> {
    this.#connection(owner).legacyClient = client
  }

  async getLegacyClient(owner: string): Promise<LegacyClient | undefined> {
    return this.#connections.get(owner)?.legacyClient
  }

  async close(): Promise<void> {
    this.#connections.clear()
  }

  #connection(owner: string): Connection {
    let c = this.#connections.get(owner)
    if (c === undefined) {
      c = { subscriptions: new Set() }
      if (this.#connections.size >= this.#limits.maxConnections) {
        // Map iteration order is insertion order: the first key is the least recently touched.
        this.#connections.delete(this.#connections.keys().next().value!)
      }
    } else {
      this.#connections.delete(owner)
    }
    this.#connections.set(owner, c)
    return c
  }
}
