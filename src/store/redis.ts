import { setTimeout as delay } from 'node:timers/promises'
import type { Cluster, Redis } from 'ioredis'
import type { LoggingLevel } from '../schema/lifecycle.js'
import type { RedisStoreOptions } from './redis-connect.js'
import { RedisConnectionState } from './redis-connections.js'
import { RedisCore } from './redis-core.js'
import { RedisMailbox } from './redis-mailbox.js'
import { RedisTasks } from './redis-tasks.js'
import {
  DEFAULT_LIMITS,
  type ClientAnswer,
  type IdempotentStart,
  type LegacyClient,
  type NotificationGroup,
  type QueuedRequest,
  type ServerMessage,
  type Store,
  type StoreLimits,
  type TaskRecord,
  type TaskText
} from './types.js'

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
 */
export class RedisStore implements Store {
  readonly limits: StoreLimits
  readonly prefix: string
  readonly #core: RedisCore
  readonly #conns: RedisConnectionState
  readonly #mail: RedisMailbox
  readonly #tasks: RedisTasks
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
      ...(wait === undefined ? {} : { wait })
    })
    this.#conns = new RedisConnectionState(this.#core)
    this.#mail = new RedisMailbox(this.#core)
    this.#tasks = new RedisTasks(this.#core)
  }

  /** Each of this store's scripts by name, as the SHA-1 it runs under (EVALSHA): for diagnostics. */
  scriptShas(): Record<string, string> {
    return this.#core.scriptShas()
  }

  /** The command connection, for plugins that share it (the rate limiter): a `Redis`, or a `Cluster`. */
  get client(): Redis | Cluster {
    return this.#core.client
  }

  setLogLevel(owner: string, level: LoggingLevel): Promise<void> {
    return this.#conns.setField(owner, 'level', level)
  }

  getLogLevel(owner: string): Promise<LoggingLevel | undefined> {
    return this.#conns.getLogLevel(owner)
  }

  subscribe(owner: string, uri: string): Promise<boolean> {
    return this.#conns.subscribe(owner, uri)
  }

  unsubscribe(owner: string, uri: string): Promise<boolean> {
    return this.#conns.unsubscribe(owner, uri)
  }

  subscriptions(owner: string): Promise<string[]> {
    return this.#conns.subscriptions(owner)
  }

  subscribers(uri: string): Promise<string[]> {
    return this.#conns.subscribers(uri)
  }

  setLegacyClient(owner: string, client: LegacyClient): Promise<void> {
    return this.#conns.setField(owner, 'legacy', JSON.stringify(client))
  }

  getLegacyClient(owner: string): Promise<LegacyClient | undefined> {
    return this.#conns.getLegacyClient(owner)
  }

  createSession(): Promise<string> {
    return this.#conns.createSession()
  }

  hasSession(id: string): Promise<boolean> {
    return this.#conns.hasSession(id)
  }

  pushNotification(owner: string, notification: ServerMessage): Promise<void> {
    return this.#mail.pushNotification(owner, notification)
  }

  broadcast(notification: ServerMessage, except?: ReadonlySet<string>): Promise<void> {
    return this.#mail.broadcast(notification, except)
  }

  takeNotifications(owner: string): Promise<NotificationGroup | undefined> {
    return this.#mail.takeNotifications(owner)
  }

  ackNotifications(owner: string, groupId: string): Promise<boolean> {
    return this.#mail.ackNotifications(owner, groupId)
  }

  enqueueRequest(owner: string, id: string, request: ServerMessage): Promise<void> {
    return this.#mail.enqueueRequest(owner, id, request)
  }

  claimRequest(owner: string): Promise<QueuedRequest | undefined> {
    return this.#mail.claimRequest(owner)
  }

  getRequest(owner: string, id: string): Promise<QueuedRequest | undefined> {
    return this.#mail.getRequest(owner, id)
  }

  completeRequest(owner: string, id: string, answer: ClientAnswer): Promise<boolean> {
    return this.#mail.completeRequest(owner, id, answer)
  }

  awaitAnswer(owner: string, id: string, signal: AbortSignal, timeoutMs: number): Promise<ClientAnswer> {
    return this.#mail.awaitAnswer(owner, id, signal, timeoutMs)
  }

  publishCancel(owner: string, requestId: string, reason: string | undefined): Promise<void> {
    return this.#core.guard(() => this.#core.bus.publishCancel(owner, requestId, reason))
  }

  onCancel(listener: (owner: string, requestId: string, reason: string | undefined) => void): () => void {
    return this.#core.bus.onCancel(listener)
  }

  publishResourceUpdated(uri: string): Promise<void> {
    return this.#core.guard(() => this.#core.bus.publishResourceUpdated(uri))
  }

  onResourceUpdated(listener: (uri: string) => void): () => void {
    return this.#core.bus.onResourceUpdated(listener)
  }

  createTask(owner: string, task: TaskRecord): Promise<void> {
    return this.#tasks.createTask(owner, task)
  }

  getTask(owner: string, taskId: string): Promise<TaskRecord | undefined> {
    return this.#tasks.getTask(owner, taskId)
  }

  getTaskText(owner: string, taskId: string): Promise<TaskText | undefined> {
    return this.#tasks.getTaskText(owner, taskId)
  }

  updateTask(owner: string, taskId: string, patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>): Promise<TaskRecord | true | undefined> {
    return this.#tasks.updateTask(owner, taskId, patch)
  }

  answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined> {
    return this.#tasks.answerTask(owner, taskId, responses)
  }

  renewTask(owner: string, taskId: string, leaseUntil: number): Promise<boolean> {
    return this.#tasks.renewTask(owner, taskId, leaseUntil)
  }

  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>> {
    return this.#tasks.awaitTaskAnswers(owner, taskId, keys, signal)
  }

  beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    return this.#tasks.beginIdempotent(owner, requestId, digest, leaseMs)
  }

  renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    return this.#tasks.renewIdempotent(owner, requestId, leaseMs)
  }

  finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    return this.#tasks.finishIdempotent(owner, requestId, response, ttlMs)
  }

  abandonIdempotent(owner: string, requestId: string): Promise<void> {
    return this.#tasks.abandonIdempotent(owner, requestId)
  }

  /** Ready once Redis answers and the subscriber listens: until then a cancel or wake-up is missed. */
  async ping(): Promise<void> {
    await Promise.all([this.#core.guard(() => this.#core.client.ping()), this.#core.bus.ready])
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
