import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { Redis, type RedisOptions } from 'ioredis'
import type { LoggingLevel } from '../schema/lifecycle.js'
import { AnswerTimeout, DISCARDED, QueueFull, TooManySubscriptions, TooManyTasks } from './store-errors.js'
import { SCRIPTS, type ScriptName } from './redis-scripts.js'
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
  type TaskRecord
} from './types.js'

export interface RedisStoreOptions {
  /** `redis://[:password@]host:port[/db]`, or `rediss://` for TLS. */
  url: string
  /**
   * Extra ioredis options (TLS, Sentinel, timeouts). `enableAutoPipelining` is on unless set here:
   * commands issued in the same event-loop turn go to Redis as one write.
   */
  redis?: RedisOptions
  /** Prefix of every key and channel, so that several servers can share one Redis (default `mcp:`). */
  prefix?: string
  limits?: Partial<StoreLimits>
  /** A logical connection unused this long is forgotten (default 24 hours). */
  connectionTtlMs?: number
  /** How long a client's answer waits for the handler that asked (default 10 minutes). */
  answerTtlMs?: number
  /**
   * Waiting handlers also look for their answers this often, in case a wake-up was lost while the
   * subscriber connection was down (default 5 s).
   */
  sweepMs?: number
}

type Waiter = () => void
type TaskPatch = Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>

const sha1 = (s: string) => createHash('sha1').update(s).digest('hex')

/**
 * A {@link Store} in Redis (6.2 or later, one primary), shared by every instance behind a load
 * balancer. Every change that must be atomic is one Lua script (see `redis-scripts.ts`); expiry is
 * Redis' own (PEXPIRE/PX); a handler waiting on one instance is woken through pub/sub when the answer
 * arrives at another.
 * @example
 * const store = new RedisStore({ url: process.env.MCP_REDIS_URL, prefix: 'mcp:' })
 * const app = await buildServer({ mcp, store })
 */
export class RedisStore implements Store {
  readonly limits: StoreLimits
  readonly prefix: string
  readonly #redis: Redis
  readonly #sub: Redis
  readonly #subscribed: Promise<unknown>
  readonly #header: [string, number, number]
  readonly #answerTtlMs: number
  readonly #waiters = new Map<string, Set<Waiter>>()
  readonly #cancelListeners = new Set<(owner: string, requestId: string, reason: string | undefined) => void>()
  readonly #updateListeners = new Set<(uri: string) => void>()
  readonly #sweep: NodeJS.Timeout
  #closing: Error | undefined

  constructor(options: RedisStoreOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits }
    this.prefix = options.prefix ?? 'mcp:'
    this.#answerTtlMs = options.answerTtlMs ?? 600_000
    this.#header = [this.prefix, options.connectionTtlMs ?? 86_400_000, this.limits.maxConnections]
    const redisOptions: RedisOptions = { maxRetriesPerRequest: 2, commandTimeout: 10_000, enableAutoPipelining: true, ...options.redis }
    const url = options.url
    this.#redis = new Redis(url, redisOptions)
    for (const [name, lua] of Object.entries(SCRIPTS)) this.#redis.defineCommand(name, { numberOfKeys: 0, lua })
    // Pub/sub needs a connection of its own: a subscribed connection can run nothing else.
    this.#sub = new Redis(url, { ...redisOptions, maxRetriesPerRequest: null })
    this.#sub.on('message', (channel: string, message: string) => this.#heard(channel, message))
    // Wake-ups published while the subscriber was reconnecting are lost: look again for everything.
    this.#sub.on('ready', () => this.#recheck())
    this.#redis.on('error', () => undefined)
    this.#sub.on('error', () => undefined)
    this.#subscribed = this.#sub.subscribe(this.prefix + 'wake', this.prefix + 'cancel', this.prefix + 'updated')
    this.#subscribed.catch(() => undefined)
    this.#sweep = setInterval(() => this.#recheck(), options.sweepMs ?? 5000).unref()
  }

  /** The command connection, for plugins that share it (the rate limiter). */
  get client(): Redis {
    return this.#redis
  }

  #run(name: ScriptName, ...args: (string | number)[]): Promise<unknown> {
    const command = (this.#redis as unknown as Record<ScriptName, (...a: (string | number)[]) => Promise<unknown>>)[name]
    return command.call(this.#redis, ...this.#header, ...args)
  }

  #conn(owner: string): string {
    return `${this.prefix}c:${sha1(owner)}`
  }

  async setLogLevel(owner: string, level: LoggingLevel): Promise<void> {
    await this.#run('mcpSetField', owner, 'level', level)
  }

  async getLogLevel(owner: string): Promise<LoggingLevel | undefined> {
    return ((await this.#redis.hget(this.#conn(owner), 'level')) ?? undefined) as LoggingLevel | undefined
  }

  async subscribe(owner: string, uri: string): Promise<boolean> {
    const added = await this.#run('mcpSubscribe', owner, uri, this.limits.maxSubscriptions)
    if (added === -1) {
      throw new TooManySubscriptions(this.limits.maxSubscriptions)
    }
    return added === 1
  }

  async unsubscribe(owner: string, uri: string): Promise<boolean> {
    return (await this.#run('mcpUnsubscribe', owner, uri)) === 1
  }

  async subscriptions(owner: string): Promise<string[]> {
    return this.#redis.smembers(`${this.#conn(owner)}:subs`)
  }

  async subscribers(uri: string): Promise<string[]> {
    return (await this.#run('mcpSubscribers', uri)) as string[]
  }

  async setLegacyClient(owner: string, client: LegacyClient): Promise<void> {
    await this.#run('mcpSetField', owner, 'legacy', JSON.stringify(client))
  }

  async getLegacyClient(owner: string): Promise<LegacyClient | undefined> {
    const json = await this.#redis.hget(this.#conn(owner), 'legacy')
    return json === null ? undefined : (JSON.parse(json) as LegacyClient)
  }

  async pushNotification(owner: string, notification: ServerMessage): Promise<void> {
    const { maxNotifications, notificationTtlMs } = this.limits
    await this.#run('mcpPush', owner, JSON.stringify(notification), maxNotifications, notificationTtlMs)
  }

  async broadcast(notification: ServerMessage): Promise<void> {
    await this.#run('mcpBroadcast', JSON.stringify(notification), this.limits.maxNotifications, this.limits.notificationTtlMs)
  }

  async takeNotifications(owner: string): Promise<NotificationGroup | undefined> {
    const { notificationBatch, notificationTtlMs } = this.limits
    const json = (await this.#run('mcpTake', owner, randomUUID(), notificationBatch, notificationTtlMs)) as string | null
    return json === null ? undefined : (JSON.parse(json) as NotificationGroup)
  }

  async ackNotifications(owner: string, groupId: string): Promise<boolean> {
    return (await this.#run('mcpAck', owner, groupId)) === 1
  }

  async enqueueRequest(owner: string, id: string, request: ServerMessage): Promise<void> {
    const discarded = JSON.stringify(DISCARDED)
    const { maxRequests, discardOldestRequests } = this.limits
    const outcome = await this.#run('mcpEnqueue', owner, id, JSON.stringify(request), maxRequests, discardOldestRequests ? 1 : 0, this.#answerTtlMs, discarded)
    if (outcome === 'FULL') throw new QueueFull(maxRequests)
  }

  async claimRequest(owner: string): Promise<QueuedRequest | undefined> {
    const r = (await this.#run('mcpClaim', owner, this.limits.redeliveryMs)) as [string, string, string, string, string] | null
    if (r === null) return undefined
    return { id: r[0], request: JSON.parse(r[1]) as ServerMessage, createdAt: Number(r[2]), deliveredAt: Number(r[3]), deliveries: Number(r[4]) }
  }

  async getRequest(owner: string, id: string): Promise<QueuedRequest | undefined> {
    const c = this.#conn(owner)
    const [[, json], [, state]] = (await this.#redis.multi().hget(`${c}:rm`, id).hget(`${c}:rs`, id).exec()) as [unknown, string | null][]
    if (json === null || state === null) return undefined
    const [createdAt, deliveredAt, deliveries] = state!.split(' ')
    const out: QueuedRequest = { id, request: JSON.parse(json!) as ServerMessage, createdAt: Number(createdAt), deliveries: Number(deliveries) }
    if (deliveredAt !== '-') out.deliveredAt = Number(deliveredAt)
    return out
  }

  async completeRequest(owner: string, id: string, answer: ClientAnswer): Promise<boolean> {
    return (await this.#run('mcpComplete', owner, id, JSON.stringify(answer), this.#answerTtlMs)) === 1
  }

  async awaitAnswer(owner: string, id: string, signal: AbortSignal, timeoutMs: number): Promise<ClientAnswer> {
    const name = `a:${sha1(owner)}:${id}`
    const answer = await this.#wait<ClientAnswer>(name, signal, timeoutMs, async () => {
      const json = await this.#redis.getdel(this.prefix + name)
      return json === null ? undefined : { value: JSON.parse(json) as ClientAnswer }
    }).catch(async (err: unknown) => {
      // Nobody waits any more: the client must not be asked (or answer) in vain.
      await this.#run('mcpWithdraw', owner, id).catch(() => undefined)
      throw err
    })
    return answer
  }

  async publishCancel(owner: string, requestId: string, reason: string | undefined): Promise<void> {
    await this.#redis.publish(this.prefix + 'cancel', JSON.stringify([owner, requestId, reason ?? null]))
  }

  onCancel(listener: (owner: string, requestId: string, reason: string | undefined) => void): () => void {
    this.#cancelListeners.add(listener)
    return () => this.#cancelListeners.delete(listener)
  }

  async publishResourceUpdated(uri: string): Promise<void> {
    await this.#redis.publish(this.prefix + 'updated', uri)
  }

  onResourceUpdated(listener: (uri: string) => void): () => void {
    this.#updateListeners.add(listener)
    return () => this.#updateListeners.delete(listener)
  }

  #task(owner: string, taskId: string): { key: string; member: string } {
    const member = `${sha1(owner)}:${taskId}`
    return { key: `${this.prefix}t:${member}`, member }
  }

  async createTask(owner: string, task: TaskRecord): Promise<void> {
    const { key, member } = this.#task(owner, task.taskId)
    const fields: string[] = []
    for (const [k, v] of Object.entries(task)) if (k !== 'inputRequests' && v !== undefined) fields.push(k, JSON.stringify(v))
    const inputs = Object.entries(task.inputRequests ?? {}).flatMap(([k, v]) => [k, JSON.stringify(v)])
    const has = task.inputRequests === undefined ? 0 : 1
    const created = await this.#run('mcpCreateTask', key, member, task.ttlMs, this.limits.maxTasks, has, fields.length / 2, ...fields, ...inputs)
    if (created === -1) {
      throw new TooManyTasks(this.limits.maxTasks)
    }
  }

  async getTask(owner: string, taskId: string): Promise<TaskRecord | undefined> {
    const found = (await this.#run('mcpGetTask', this.#task(owner, taskId).key)) as [string[], string[]] | null
    return found === null ? undefined : toTask(found)
  }

  async updateTask(owner: string, taskId: string, patch: TaskPatch): Promise<TaskRecord | undefined> {
    const set: string[] = []
    const del: string[] = []
    for (const [k, v] of Object.entries(patch)) {
      if (k === 'inputRequests' || k === 'taskId' || k === 'createdAt') continue
      if (v === undefined) del.push(k)
      else set.push(k, JSON.stringify(v))
    }
    const ir = !('inputRequests' in patch) ? 'keep' : patch.inputRequests === undefined ? 'del' : 'set'
    const inputs = Object.entries(patch.inputRequests ?? {}).flatMap(([k, v]) => [k, JSON.stringify(v)])
    const stamp = JSON.stringify(new Date().toISOString())
    const out = (await this.#run('mcpUpdateTask', this.#task(owner, taskId).key, stamp, ir, set.length / 2, ...set, del.length, ...del, ...inputs)) as
      | [string[], string[]]
      | null
    return out === null ? undefined : toTask(out)
  }

  async answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined> {
    const { key, member } = this.#task(owner, taskId)
    const pairs = Object.entries(responses).flatMap(([k, v]) => [k, JSON.stringify(v)])
    const stamp = JSON.stringify(new Date().toISOString())
    return ((await this.#run('mcpAnswerTask', key, `t:${member}`, stamp, ...pairs)) as string[] | null) ?? undefined
  }

  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>> {
    const { key, member } = this.#task(owner, taskId)
    return this.#wait(`t:${member}`, signal, undefined, async () => {
      const got = (await this.#run('mcpTakeTaskAnswers', key, ...keys)) as string[] | number
      if (got === -1) throw new Error('The task is gone')
      if (got === 0) return undefined
      const out: Record<string, Record<string, unknown>> = {}
      keys.forEach((k, i) => (out[k] = JSON.parse((got as string[])[i]!) as Record<string, unknown>))
      return { value: out }
    })
  }

  async createSession(): Promise<string> {
    const id = randomBytes(18).toString('base64url')
    await this.#run('mcpCreateSession', id, this.limits.sessionTtlMs, this.limits.maxConnections)
    return id
  }

  async hasSession(id: string): Promise<boolean> {
    return (await this.#run('mcpTouchSession', id, this.limits.sessionTtlMs)) === 1
  }

  #idem(owner: string, requestId: string): { key: string; member: string } {
    const member = `${sha1(owner)}:${requestId}`
    return { key: `${this.prefix}i:${member}`, member }
  }

  async beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    const { key, member } = this.#idem(owner, requestId)
    const [state, response] = (await this.#run('mcpBeginIdempotent', key, member, digest, leaseMs, this.limits.maxIdempotencyRecords)) as [
      IdempotentStart['state'],
      string?
    ]
    return state === 'done' ? { state, response: response! } : { state }
  }

  async renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    const { key, member } = this.#idem(owner, requestId)
    return (await this.#run('mcpRenewIdempotent', key, member, leaseMs)) === 1
  }

  async finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    const { key, member } = this.#idem(owner, requestId)
    await this.#run('mcpFinishIdempotent', key, member, response, ttlMs)
  }

  async abandonIdempotent(owner: string, requestId: string): Promise<void> {
    const { key, member } = this.#idem(owner, requestId)
    await this.#redis.multi().del(key).zrem(`${this.prefix}idem`, member).exec()
  }

  /** Ready once Redis answers and the subscriber listens: until then a cancel or wake-up is missed. */
  async ping(): Promise<void> {
    await Promise.all([this.#redis.ping(), this.#subscribed])
  }

  async close(): Promise<void> {
    if (this.#closing !== undefined) return
    this.#closing = new Error('The store is closing')
    clearInterval(this.#sweep)
    this.#recheck()
    await Promise.allSettled([this.#sub.quit(), this.#redis.quit()])
  }

  /**
   * Wait for `name` to be woken (or a sweep, or a reconnection) until `take` finds what it waits
   * for. `take` is atomic in Redis, so overlapping looks hand the value to one of them only. Rejects
   * with the signal's reason, a timeout, or the store closing.
   */
  #wait<T>(name: string, signal: AbortSignal, timeoutMs: number | undefined, take: () => Promise<{ value: T } | undefined>): Promise<T> {
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
      if (signal.aborted) return finish(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      // Subscribed first, then look: an answer that lands in between wakes us.
      this.#subscribed.then(look, finish)
    })
  }

  #recheck(): void {
    for (const set of this.#waiters.values()) for (const look of set) look()
  }

  #heard(channel: string, message: string): void {
    if (channel === this.prefix + 'cancel') {
      const [owner, requestId, reason] = JSON.parse(message) as [string, string, string | null]
      for (const l of this.#cancelListeners) l(owner, requestId, reason ?? undefined)
      return
    }
    if (channel === this.prefix + 'updated') {
      for (const l of this.#updateListeners) l(message)
      return
    }
    for (const look of this.#waiters.get(message) ?? []) look()
  }
}

/** A task from its hash fields (JSON values) and its outstanding input requests. */
function toTask([fields, inputs]: [string[], string[]]): TaskRecord {
  const task: Record<string, unknown> = {}
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] !== 'inputRequests') task[fields[i]!] = JSON.parse(fields[i + 1]!)
  }
  if (fields.some((f, i) => i % 2 === 0 && f === 'inputRequests')) {
    const requests: Record<string, ServerMessage> = {}
    for (let i = 0; i < inputs.length; i += 2) requests[inputs[i]!] = JSON.parse(inputs[i + 1]!) as ServerMessage
    task.inputRequests = requests
  }
  return task as unknown as TaskRecord
}
