import { randomUUID } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { storeFailure } from '../store/redis-core.js'
import { RedisKeys } from '../store/redis-keys.js'
import { evalScript, script, type Script } from '../store/redis-eval.js'
import { WEBHOOK_SCRIPTS, type WebhookScript } from './redis-scripts.js'
import type { ClaimedDelivery, DeliveryAttempt, PendingDelivery, PendingLimits, WebhookRecord, WebhookStore } from './types.js'

// Each script's SHA-1, worked out once (run by EVALSHA: see evalScript).
const LOADED = Object.fromEntries(Object.entries(WEBHOOK_SCRIPTS).map(([name, [keys, lua]]) => [name, script(lua, keys)])) as Record<WebhookScript, Script>

/**
 * A {@link WebhookStore} in Redis, on the connection and under the prefix of the RedisStore beside
 * it: webhooks in one hash per owner, each webhook's pending deliveries in a sorted set by due time
 * (a claimed one is due again when its lease ends), and a schedule of webhooks with work, which
 * every instance polls. See redis-scripts.ts for the slots.
 * @example
 * const webhooks = new RedisWebhookStore(store.client, store.prefix)
 */
export class RedisWebhookStore implements WebhookStore {
  readonly #keys: RedisKeys
  readonly #sched: string
  readonly #gen: string
  readonly #index: string

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix: string
  ) {
    this.#keys = new RedisKeys(prefix)
    // Webhook id -> owner, for broadcasts. Beside the schedule, not with the owner's hash (another
    // slot): a webhook missing from it (a crash between the two writes) gets broadcasts on /notifications.
    const schedule = this.#keys.webhookSchedule
    this.#sched = schedule.sched
    this.#gen = schedule.gen
    this.#index = schedule.owners
  }

  /**
   * Every method goes through here: what the driver throws becomes our store error (storeFailure,
   * as in RedisStore), so Redis not answering is a 503 with Retry-After on the routes, like every
   * other route's, never a 500 that hides it.
   */
  #guard<T>(send: () => Promise<T>): Promise<T> {
    return send().then(undefined, (err: unknown) => {
      throw storeFailure(err)
    })
  }

  #run(name: WebhookScript, ...args: (string | number)[]): Promise<unknown> {
    return evalScript(this.redis, LOADED[name], args)
  }

  #hooks(owner: string): string {
    return this.#keys.webhooks(owner)
  }

  #keysOf(id: string): [string, string, string, string] {
    const k = this.#keys.webhookDeliveries(id)
    return [k.due, k.msgs, k.leases, k.bytes]
  }

  addWebhook(hook: WebhookRecord, max: number): Promise<boolean> {
    return this.#guard(async () => {
      if ((await this.#run('whAdd', this.#hooks(hook.owner), hook.id, JSON.stringify(hook), max)) !== 1) return false
      await this.redis.hset(this.#index, hook.id, hook.owner)
      return true
    })
  }

  owners(): Promise<string[]> {
    return this.#guard(async () => [...new Set(await this.redis.hvals(this.#index))])
  }

  webhooks(owner: string): Promise<WebhookRecord[]> {
    return this.#guard(async () => {
      const all = (await this.redis.hvals(this.#hooks(owner))).map((raw) => JSON.parse(raw) as WebhookRecord)
      return all.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
    })
  }

  webhook(owner: string, id: string): Promise<WebhookRecord | undefined> {
    return this.#guard(async () => {
      const raw = await this.redis.hget(this.#hooks(owner), id)
      return raw === null ? undefined : (JSON.parse(raw) as WebhookRecord)
    })
  }

  removeWebhook(owner: string, id: string): Promise<PendingDelivery[] | undefined> {
    return this.#guard(async () => {
      if ((await this.redis.hdel(this.#hooks(owner), id)) === 0) return undefined
      const pending = await this.drain(id)
      await this.redis.del(this.#keys.webhookDeliveries(id).log)
      await this.redis.multi().zrem(this.#sched, id).hdel(this.#gen, id).hdel(this.#index, id).exec()
      return pending
    })
  }

  settle(owner: string, id: string, ok: boolean, disableAfter: number, reason: string): Promise<WebhookRecord | undefined> {
    return this.#guard(async () => {
      const raw = (await this.#run('whSettle', this.#hooks(owner), id, ok ? 1 : 0, disableAfter, reason, new Date().toISOString())) as string | null
      return raw === null ? undefined : (JSON.parse(raw) as WebhookRecord)
    })
  }

  enqueue(d: PendingDelivery, limits: PendingLimits): Promise<boolean> {
    return this.#guard(async () => {
      const [due, msgs, , bytes] = this.#keysOf(d.webhookId)
      const size = Buffer.byteLength(d.body)
      const ok = await this.#run('whEnqueue', due, msgs, bytes, d.id, JSON.stringify(d), d.createdAt, size, limits.maxPending, limits.maxPendingBytes)
      if (ok !== 1) return false
      await this.#run('whSchedule', this.#sched, this.#gen, d.webhookId, d.createdAt)
      return true
    })
  }

  claim(now: number, leaseMs: number, max: number): Promise<ClaimedDelivery[]> {
    return this.#guard(async () => {
      const polled = (await this.#run('whPoll', this.#sched, this.#gen, now, max)) as string[]
      const out: ClaimedDelivery[] = []
      for (let i = 0; i < polled.length && out.length < max; i += 2) {
        const id = polled[i]!
        const [due, msgs, leases] = this.#keysOf(id)
        const got = (await this.#run('whClaim', due, msgs, leases, now, now + leaseMs, max - out.length, `${randomUUID()}:`)) as string[]
        for (let j = 0; j + 1 < got.length; j += 2) out.push({ ...(JSON.parse(got[j]!) as PendingDelivery), lease: got[j + 1]! })
        await this.#run('whReschedule', this.#sched, this.#gen, id, polled[i + 1]!, got[got.length - 1]!)
      }
      return out
    })
  }

  retry(d: ClaimedDelivery, dueAt: number): Promise<boolean> {
    return this.#guard(async () => {
      const [due, msgs, leases] = this.#keysOf(d.webhookId)
      const { lease, ...pending } = d
      if ((await this.#run('whRetry', due, msgs, leases, d.id, lease, JSON.stringify(pending), dueAt)) !== 1) return false
      await this.#run('whSchedule', this.#sched, this.#gen, d.webhookId, dueAt)
      return true
    })
  }

  finish(d: ClaimedDelivery): Promise<boolean> {
    return this.#guard(async () => (await this.#run('whFinish', ...this.#keysOf(d.webhookId), d.id, d.lease, Buffer.byteLength(d.body))) === 1)
  }

  drain(webhookId: string): Promise<PendingDelivery[]> {
    return this.#guard(async () => ((await this.#run('whDrain', ...this.#keysOf(webhookId))) as string[]).map((raw) => JSON.parse(raw) as PendingDelivery))
  }

  logAttempt(webhookId: string, attempt: DeliveryAttempt, keep: number): Promise<void> {
    return this.#guard(async () => {
      const key = this.#keys.webhookDeliveries(webhookId).log
      await this.redis.multi().lpush(key, JSON.stringify(attempt)).ltrim(key, 0, keep - 1).exec()
    })
  }

  attempts(webhookId: string): Promise<DeliveryAttempt[]> {
    return this.#guard(async () => (await this.redis.lrange(this.#keys.webhookDeliveries(webhookId).log, 0, -1)).map((raw) => JSON.parse(raw) as DeliveryAttempt))
  }

  /** The connection belongs to the RedisStore: nothing to close here. */
  async close(): Promise<void> {}
}
