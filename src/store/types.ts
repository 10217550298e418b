import type { LoggingLevel } from '../schema/lifecycle.js'

/** What a legacy-era client said in `initialize`, kept for its logical connection. */
export interface LegacyClient {
  protocolVersion: string
  capabilities: Record<string, unknown>
  clientInfo: { name: string; version: string }
}

/**
 * State that outlives one request and must be shared by every instance. Every method takes the
 * owner (the principal id of the logical connection) and never touches another owner's state.
 * The in-memory implementation is the embedded default; a Redis one shares state between instances.
 */
export interface Store {
  /** The minimum level of `notifications/message` this connection receives (`POST /logLevel`). */
  setLogLevel(owner: string, level: LoggingLevel): Promise<void>
  getLogLevel(owner: string): Promise<LoggingLevel | undefined>
  /** Subscribe the connection to a resource URI. Resolves false when it already was. */
  subscribe(owner: string, uri: string): Promise<boolean>
  /** Resolves false when the connection was not subscribed. */
  unsubscribe(owner: string, uri: string): Promise<boolean>
  subscriptions(owner: string): Promise<string[]>
  /** Remember (or read) the legacy-era `initialize` of a connection. */
  setLegacyClient(owner: string, client: LegacyClient): Promise<void>
  getLegacyClient(owner: string): Promise<LegacyClient | undefined>
  close(): Promise<void>
}

export interface StoreLimits {
  /** Resource subscriptions one connection may hold (default 1000). */
  maxSubscriptions: number
  /** Logical connections whose state is kept; the least recently used is forgotten first (default 10000). */
  maxConnections: number
}
