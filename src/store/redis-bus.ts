import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { AnswerTimeout } from './store-errors.js'
import type { RedisKeys } from './redis-keys.js'

type Look = () => void
type CancelListener = (owner: string, requestId: string, reason: string | undefined) => void

/** Channels every instance hears (cancellations, resource updates), spread over this many slots. */
export const BUS_CHANNELS = 16

/**
 * The pub/sub side of a {@link RedisStore}. Two kinds of channel:
 * - wake-ups `P w:{tag}` on the slot of what they wake for (a connection's answers, one task),
 *   published by the script that records the answer; an instance listens to one only while a
 *   handler on it waits there, so a wake-up reaches only the instances that wait for it;
 * - the bus `P bus:{0..15}` for what any instance may need (a cancellation: the request may run
 *   anywhere; a resource update: any instance may hold a listening stream). Every instance listens
 *   to all 16; a message goes to one of them (by its owner or URI), so that on a cluster the load
 *   spreads over the shards that serve those 16 slots instead of every node relaying every message.
 * On a cluster these are shard channels (SPUBLISH/SSUBSCRIBE, Redis 7); elsewhere classic ones.
 */
export class RedisBus {
  readonly #client: Redis | Cluster
  readonly #sub: Redis | Cluster
  readonly #sharded: boolean
  readonly #keys: RedisKeys
  readonly #busPrefix: string
  readonly #waiters = new Map<string, Set<Look>>()
  readonly #listening = new Map<string, { n: number; subscribed: Promise<unknown> }>()
  readonly #cancel = new Set<CancelListener>()
  readonly #updated = new Set<(uri: string) => void>()
  readonly #sweep: NodeJS.Timeout
  readonly #busChannels: string[]
  /** Settles once the bus channels are subscribed. */
  readonly ready: Promise<unknown>
  #closing: Error | undefined

  constructor(client: Redis | Cluster, sub: Redis | Cluster, sharded: boolean, keys: RedisKeys, sweepMs: number) {
    this.#client = client
    this.#sub = sub
    this.#sharded = sharded
    this.#keys = keys
    this.#busPrefix = keys.busPrefix
    sub.on(sharded ? 'smessage' : 'message', (channel: string, message: string) => this.#heard(channel, message))
    // A reconnected subscriber (one server, or Sentinel) listens again, before anyone looks: it is
    // made with autoResubscribe off (see connect), since ioredis would leave a failed SUBSCRIBE unhandled.
    if (!sharded) sub.on('ready', () => this.#subscribeAll())
    // Wake-ups published while a subscriber was reconnecting are lost: look again for everything.
    for (const event of ['ready', '+subscriber']) sub.on(event, () => this.#heal())
    this.#busChannels = Array.from({ length: BUS_CHANNELS }, (_, n) => keys.bus(n))
    this.ready = Promise.all(this.#busChannels.map((c) => this.#subscribe(c)))
    this.ready.catch(() => undefined)
    this.#sweep = setInterval(() => this.#heal(), sweepMs).unref()
  }

  /**
   * Look again for everything; on a cluster, subscribe again to every channel: after a failover
   * ioredis (6.0) opens a subscriber on the promoted replica but does not move the shard's channels
   * to it. SSUBSCRIBE of a channel already subscribed is a no-op; a message may then come twice
   * for a while (from the old node, now a replica, and the new primary), which every listener bears.
   */
  #heal(): void {
    if (this.#sharded) this.#subscribeAll()
    this.recheck()
  }

  /** Subscribe again to the bus channels and every channel waited on; a failure waits for the next try. */
  #subscribeAll(): void {
    // A race no test can order: close() while a reconnected connection subscribes again.
    /* c8 ignore next */
    if (this.#closing !== undefined) return
    const channels = [...this.#busChannels, ...this.#listening.keys()]
    if (this.#sharded) for (const c of channels) this.#sub.ssubscribe(c).catch(() => undefined)
    else (this.#sub as Redis).subscribe(...channels).catch(() => undefined)
  }

  #subscribe(channel: string): Promise<unknown> {
    return this.#sharded ? this.#sub.ssubscribe(channel) : this.#sub.subscribe(channel)
  }

  #publish(channel: string, message: string): Promise<unknown> {
    return this.#sharded ? this.#client.spublish(channel, message) : this.#client.publish(channel, message)
  }

  /** The bus channel of a message about `subject` (an owner or a URI). */
  #bus(subject: string): string {
    return this.#keys.bus(parseInt(createHash('sha1').update(subject).digest('hex').slice(0, 4), 16) % BUS_CHANNELS)
  }

  async publishCancel(owner: string, requestId: string, reason: string | undefined): Promise<void> {
    await this.#publish(this.#bus(owner), JSON.stringify(['c', owner, requestId, reason ?? null]))
  }

  onCancel(listener: CancelListener): () => void {
    this.#cancel.add(listener)
    return () => this.#cancel.delete(listener)
  }

  async publishResourceUpdated(uri: string): Promise<void> {
    await this.#publish(this.#bus(uri), JSON.stringify(['u', uri]))
  }

  onResourceUpdated(listener: (uri: string) => void): () => void {
    this.#updated.add(listener)
    return () => this.#updated.delete(listener)
  }

  /**
   * Wait for `name` to be woken on `channel` (or a sweep, or a reconnection) until `take` finds what
   * it waits for. `take` is atomic in Redis, so overlapping looks hand the value to one of them only.
   * Rejects with the signal's reason, a timeout, or the bus closing.
   */
  wait<T>(channel: string, name: string, signal: AbortSignal, timeoutMs: number | undefined, take: () => Promise<{ value: T } | undefined>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let done = false
      const finish = (err: unknown, value?: T) => {
        if (done) return
        done = true
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        const set = this.#waiters.get(name)!
        set.delete(look)
        if (set.size === 0) this.#waiters.delete(name)
        this.#unlisten(channel)
        if (err === undefined) resolve(value as T)
        else reject(err)
      }
      const look = () => {
        if (this.#closing !== undefined) return finish(this.#closing)
        take().then((got) => got === undefined || finish(undefined, got.value), finish)
      }
      const onAbort = () => finish(signal.reason)
      const timer =
        timeoutMs === undefined ? undefined : setTimeout(() => finish(new AnswerTimeout(`The client did not answer within ${timeoutMs} ms`)), timeoutMs)
      let set = this.#waiters.get(name)
      if (set === undefined) this.#waiters.set(name, (set = new Set()))
      set.add(look)
      const listening = this.#listen(channel)
      if (signal.aborted) return finish(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      // Subscribed first, then look: an answer that lands in between wakes us.
      listening.then(look, finish)
    })
  }

  #listen(channel: string): Promise<unknown> {
    let entry = this.#listening.get(channel)
    if (entry === undefined) this.#listening.set(channel, (entry = { n: 0, subscribed: this.#subscribe(channel) }))
    entry.n++
    return entry.subscribed
  }

  #unlisten(channel: string): void {
    const entry = this.#listening.get(channel)!
    if (--entry.n > 0) return
    this.#listening.delete(channel)
    if (this.#closing === undefined) (this.#sharded ? this.#sub.sunsubscribe(channel) : this.#sub.unsubscribe(channel)).catch(() => undefined)
  }

  /** Every waiting handler looks again. */
  recheck(): void {
    for (const set of this.#waiters.values()) for (const look of set) look()
  }

  /** Reject every wait; stop the sweep. */
  close(): void {
    this.#closing = new Error('The store is closing')
    clearInterval(this.#sweep)
    this.recheck()
  }

  #heard(channel: string, message: string): void {
    if (!channel.startsWith(this.#busPrefix)) {
      for (const look of this.#waiters.get(message) ?? []) look()
      return
    }
    const m = JSON.parse(message) as ['c', string, string, string | null] | ['u', string]
    if (m[0] === 'c') for (const l of this.#cancel) l(m[1], m[2], m[3] ?? undefined)
    else for (const l of this.#updated) l(m[1])
  }
}
