import { randomBytes } from 'node:crypto'
import { TooManySubscriptions } from './store-errors.js'
import { admitsLog, type LoggingLevel } from '../schema/lifecycle.js'
import type { RedisCore } from './redis-core.js'
import type { ConnectionStore, LegacyClient } from './types.js'
import { PART, REGISTRY } from './redis-keys.js'

/**
 * A {@link RedisStore}'s logical connections: their fields, resource subscriptions, sessions.
 * A subscription is kept twice: in the connection's set (its slot) and in the URI's subscriber set
 * (the URI's slot), which `subscribers` reads and cleans of connections no longer live.
 */
export class RedisConnections implements ConnectionStore {
  readonly #r: RedisCore

  constructor(core: RedisCore) {
    this.#r = core
  }

  setLogLevel(owner: string, level: LoggingLevel): Promise<void> {
    return this.#setField(owner, 'level', level)
  }

  setLegacyClient(owner: string, client: LegacyClient): Promise<void> {
    return this.#setField(owner, 'legacy', JSON.stringify(client))
  }

  async #setField(owner: string, field: 'level' | 'legacy', value: string): Promise<void> {
    await Promise.all([this.#r.use(owner), this.#r.write('mcpSetField', this.#r.keys.conn(owner), field, value)])
  }

  async getLogLevel(owner: string): Promise<LoggingLevel | undefined> {
    return ((await this.#r.guard(() => this.#r.client.hget(this.#r.keys.conn(owner), 'level'))) ?? undefined) as LoggingLevel | undefined
  }

  /**
   * One read of the registry for the live connections, then each one's level on its own slot
   * (pipelined per node): O(connections), as a broadcast is, and no index to keep bounded.
   */
  async loggers(level: LoggingLevel): Promise<string[]> {
    const live = (await this.#r.run('mcpLive', this.#r.keys.registry(REGISTRY.connections))) as string[]
    const levels = await Promise.all(live.map((o) => this.#r.guard(() => this.#r.client.hget(this.#r.keys.conn(o), 'level'))))
    return live.filter((_o, i) => admitsLog(levels[i] ?? undefined, level))
  }

  async getLegacyClient(owner: string): Promise<LegacyClient | undefined> {
    const json = await this.#r.guard(() => this.#r.client.hget(this.#r.keys.conn(owner), 'legacy'))
    return json === null ? undefined : (JSON.parse(json) as LegacyClient)
  }

  async subscribe(owner: string, uri: string): Promise<boolean> {
    const max = this.#r.limits.maxSubscriptions
    const [, added] = await Promise.all([this.#r.use(owner), this.#r.write('mcpSubscribe', this.#r.keys.conn(owner), uri, max)])
    if (added === -1) throw new TooManySubscriptions(max)
    if (added === 1) await this.#r.write('mcpSubscriber', this.#r.keys.uri(uri), owner, 1)
    return added === 1
  }

  async unsubscribe(owner: string, uri: string): Promise<boolean> {
    if ((await this.#r.guard(() => this.#r.client.srem(this.#r.keys.conn(owner, PART.subs), uri))) === 0) return false
    await this.#r.guard(() => this.#r.client.srem(this.#r.keys.uri(uri), owner))
    return true
  }

  subscriptions(owner: string): Promise<string[]> {
    return this.#r.guard(() => this.#r.client.smembers(this.#r.keys.conn(owner, PART.subs)))
  }

  /** One read of the URI's set, one of the registry (which of them are live), and the dead ones removed. */
  async subscribers(uri: string): Promise<string[]> {
    const key = this.#r.keys.uri(uri)
    const members = await this.#r.guard(() => this.#r.client.smembers(key))
    if (members.length === 0) return []
    const live = (await this.#r.run('mcpLive', this.#r.keys.registry(REGISTRY.connections), ...members)) as string[]
    const dead = members.filter((m) => !live.includes(m))
    // Members whose instance died (its registry entry lapsed): the tests meet them only by timing.
    /* c8 ignore next */
    if (dead.length > 0) await this.#r.guard(() => this.#r.client.srem(key, ...dead))
    return live
  }

  async createSession(): Promise<string> {
    const id = randomBytes(18).toString('base64url')
    await this.#r.write('mcpCreateSession', this.#r.keys.registry(REGISTRY.sessions), id, this.#r.limits.sessionTtlMs, this.#r.limits.maxConnections)
    return id
  }

  async hasSession(id: string): Promise<boolean> {
    return (await this.#r.run('mcpTouchSession', this.#r.keys.registry(REGISTRY.sessions), id, this.#r.limits.sessionTtlMs)) === 1
  }
}
