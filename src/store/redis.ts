import { setTimeout as delay } from 'node:timers/promises'
import type { Cluster, Redis } from 'ioredis'
import type { RedisStoreOptions } from './redis-connect.js'
import { RedisConnections } from './redis-connections.js'
import { RedisCore } from './redis-core.js'
import { RedisIdempotency } from './redis-idempotency.js'
import { RedisMailbox } from './redis-mailbox.js'
import { RedisTasks } from './redis-tasks.js'
import { DEFAULT_LIMITS, type Signals, type Store, type StoreCompanions, type StoreLimits } from './types.js'

export type { RedisStoreOptions }

/** How long closing a store waits for Redis to acknowledge QUIT before it disconnects. */
const QUIT_WAIT_MS = 2000

/**
 * A {@link Store} in Redis (6.2 or later; 7 for a cluster), shared by every instance behind a load
 * balancer: one server (`url`), Redis Cluster (`clusterNodes`) or a primary under Sentinel
 * (`sentinels`). Every change that must be atomic is one Lua script on one slot (see
 * `redis-scripts.ts`); expiry is Redis' own (PEXPIRE/PX); a handler waiting on one instance is woken
 * through pub/sub when the answer arrives at another (see `redis-bus.ts`).
 * @example
 * const store = new RedisStore({ url: process.env.MCP_REDIS_URL, prefix: 'mcp:' })
 * const cluster = new RedisStore({ clusterNodes: ['10.0.0.1:6379', '10.0.0.2:6379'], password })
 * const app = await buildServer({ mcp, store })
 * await store.tasks.getTask(owner, taskId)
 */
export class RedisStore implements Store {
  readonly limits: StoreLimits
  readonly prefix: string
  readonly connections: RedisConnections
  readonly mailbox: RedisMailbox
  readonly signals: Signals
  readonly tasks: RedisTasks
  readonly idempotency: RedisIdempotency
  /** On this store's connection and under its prefix, so that they hold across instances as the roles do. */
  readonly companions: StoreCompanions = {
    rateLimit: async () => ({ redis: this.client, nameSpace: this.#core.keys.rateLimit }),
    onceKeys: async () => ({ once: (key, ttlMs) => redisOnce(this.#core, key, ttlMs) }),
    webhooks: async () => new (await import('../webhooks/redis.js')).RedisWebhookStore(this.client, this.prefix),
    roundRelay: async () => new (await import('../gateway/relay.js')).RedisRelay(this.client, this.prefix)
  }

  readonly #core: RedisCore
  #closed = false

  constructor(options: RedisStoreOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits }
    this.prefix = options.prefix ?? 'mcp:'
    const wait = options.waitReplicas === undefined ? undefined : { replicas: options.waitReplicas, timeoutMs: options.waitTimeoutMs ?? 1000 }
    // A WAIT must be able to take its whole timeout without the command timing out first.
    const commandTimeoutMs = Math.max(options.commandTimeoutMs ?? 2000, wait === undefined ? 0 : wait.timeoutMs + 1000)
    this.#core = new RedisCore({ ...options, commandTimeoutMs }, this.prefix, this.limits, {
      connectionTtlMs: options.connectionTtlMs ?? 86_400_000,
      answerTtlMs: options.answerTtlMs ?? 600_000,
      sweepMs: options.sweepMs ?? 5000,
      functions: options.functions ?? 'auto',
      ledgerShards: ledgerShards(options),
      ...(wait === undefined ? {} : { wait })
    })
    this.connections = new RedisConnections(this.#core)
    this.mailbox = new RedisMailbox(this.#core)
    this.signals = redisSignals(this.#core)
    this.tasks = new RedisTasks(this.#core)
    this.idempotency = new RedisIdempotency(this.#core)
  }

  /** Each of this store's scripts by name, as the SHA-1 it runs under (EVALSHA): for diagnostics. */
  scriptShas(): Record<string, string> {
    return this.#core.scriptShas()
  }

  /**
   * The function library this store's steps run from (FCALL), or undefined when they run as scripts
   * (EVALSHA): Redis before 7, functions refused, or `functions: 'off'`. Waits for the choice.
   */
  functionLibrary(): Promise<string | undefined> {
    return this.#core.functionLibrary()
  }

  /** The command connection, for plugins that share it (the rate limiter): a `Redis`, or a `Cluster`. */
  get client(): Redis | Cluster {
    return this.#core.client
  }

  /** Ready once Redis answers, the subscriber listens (until then a cancel or wake-up is missed) and the steps have their way (functions or scripts). */
  async ping(): Promise<void> {
    await Promise.all([this.#core.guard(() => this.#core.client.ping()), this.#core.bus.ready, this.#core.guard(() => this.#core.chosen())])
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#core.bus.close()
    // QUIT waits for an answer: to a Redis that is gone it would wait forever (the subscriber retries
    // without end), and a Cluster's QUIT goes to every node it knows, a master killed a moment ago
    // among them. So QUIT only when ready, and for at most QUIT_WAIT_MS: disconnect ends it anyway.
    const quit = (c: Redis | Cluster) =>
      c.status === 'ready' ? Promise.race([c.quit().catch(() => undefined), delay(QUIT_WAIT_MS, undefined, { ref: false })]) : undefined
    await Promise.all([quit(this.#core.sub), quit(this.#core.client)])
    // Under Sentinel, QUIT leaves the failover detector's Sentinel connections open: close them too.
    this.#core.sub.disconnect()
    this.#core.client.disconnect()
  }
}

/**
 * The most shards of each ledger: only a Redis Cluster spreads them over its masters, so 16 there
 * (fewer when the bounds leave no room, see `redis-ledger.ts`) and one elsewhere (exact bounds).
 */
function ledgerShards(options: RedisStoreOptions): number {
  const n = options.ledgerShards ?? (options.clusterNodes === undefined ? 1 : 16)
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new Error(`RedisStore: ledgerShards must be an integer from 1 to 256, not ${n}`)
  return n
}

/**
 * One `SET NX PX` on the key's own slot (a single-key command: any Cluster node that owns it):
 * atomic, expired by Redis, so no script and no ledger. Bounded by Redis' `maxmemory`.
 */
async function redisOnce(core: RedisCore, key: string, ttlMs: number): Promise<boolean> {
  const answer = await core.guard(() => core.client.set(core.keys.once(key), '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX'))
  return answer === 'OK'
}

/** Cancellations and resource updates on the bus (see `redis-bus.ts`); a publish fails as every command does. */
function redisSignals(core: RedisCore): Signals {
  const bus = core.bus
  return {
    publishCancel: (owner, requestId, reason) => core.guard(() => bus.publishCancel(owner, requestId, reason)),
    onCancel: (listener) => bus.onCancel(listener),
    publishResourceUpdated: (uri) => core.guard(() => bus.publishResourceUpdated(uri)),
    onResourceUpdated: (listener) => bus.onResourceUpdated(listener)
  }
}
