import { randomBytes } from 'node:crypto'
import { TooManySubscriptions } from './store-errors.js'
import type { LoggingLevel } from '../schema/lifecycle.js'
import type { RedisCore } from './redis-core.js'
import type { LegacyClient } from './types.js'

/**
 * A {@link RedisStore}'s logical connections: their fields, resource subscriptions, sessions.
 * A subscription is kept twice: in the connection's set (its slot) and in the URI's subscriber set
 * (the URI's slot), which `subscribers` reads and cleans of connections no longer live.
 */
export class RedisConnectionState {
  readonly #r: RedisCore

  constructor(core: RedisCore) {
    this.#r = core
  }

  async setField(owner: string, field: 'level' | 'legacy', value: string): Promise<void> {
    await Promise.all([this.#r.use(owner), this.#r.write('mcpSetField', this.#r.conn(owner), field, value)])
  }

  async getLogLevel(owner: string): Promise<LoggingLevel | undefined> {
    return ((await this.#r.guard(() => this.#r.client.hget(this.#r.conn(owner), 'level'))) ?? undefined) as LoggingLevel | undefined
  }

  async getLegacyClient(owner: string): Promise<LegacyClient | undefined> {
    const json = await this.#r.guard(() => this.#r.client.hget(this.#r.conn(owner), 'legacy'))
    return json === null ? undefined : (JSON.parse(json) as LegacyClient)
  }

  async subscribe(owner: string, uri: string): Promise<boolean> {
    const max = this.#r.limits.maxSubscriptions
    const [, added] = await Promise.all([this.#r.use(owner), this.#r.write('mcpSubscribe', this.#r.conn(owner), uri, max)])
    if (added === -1) throw new TooManySubscriptions(max)
    if (added === 1) await this.#r.write('mcpSubscriber', this.#r.uri(uri), owner, 1)
    return added === 1
  }

  async unsubscribe(owner: string, uri: string): Promise<boolean> {
    if ((await this.#r.guard(() => this.#r.client.srem(`${this.#r.conn(owner)}:subs`, uri))) === 0) return false
    await this.#r.guard(() => this.#r.client.srem(this.#r.uri(uri), owner))
    return true
  }

  subscriptions(owner: string): Promise<string[]> {
    return this.#r.guard(() => this.#r.client.smembers(`${this.#r.conn(owner)}:subs`))
  }

  /** One read of the URI's set, one of the registry (which of them are live), and the dead ones removed. */
  async subscribers(uri: string): Promise<string[]> {
    const key = this.#r.uri(uri)
    const members = await this.#r.guard(() => this.#r.client.smembers(key))
    if (members.length === 0) return []
    const live = (await this.#r.run('mcpLive', this.#r.registry('conns'), ...members)) as string[]
    const dead = members.filter((m) => !live.includes(m))
    if (dead.length > 0) await this.#r.guard(() => this.#r.client.srem(key, ...dead))
    return live
  }

  async createSession(): Promise<string> {
    const id = randomBytes(18).toString('base64url')
    await this.#r.write('mcpCreateSession', this.#r.registry('sess'), id, this.#r.limits.sessionTtlMs, this.#r.limits.maxConnections)
    return id
  }

  async hasSession(id: string): Promise<boolean> {
    return (await this.#r.run('mcpTouchSession', this.#r.registry('sess'), id, this.#r.limits.sessionTtlMs)) === 1
  }
}
