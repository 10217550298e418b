import { randomBytes, randomUUID } from 'node:crypto'
import { AnswerTimeout, DISCARDED, QueueFull, TooManySubscriptions, TooManyTasks } from './store-errors.js'
import type { LoggingLevel } from '../schema/lifecycle.js'
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
  TERMINAL
} from './types.js'

interface Connection {
  logLevel?: LoggingLevel
  subscriptions: Set<string>
  legacyClient?: LegacyClient
  /** Undelivered notifications, oldest first. */
  queue: { message: ServerMessage; at: number }[]
  group?: NotificationGroup
  lastAcked?: string
  /** Active and pending requests, oldest first (Map keeps insertion order). */
  requests: Map<string, QueuedRequest>
}

interface StoredTask {
  record: TaskRecord
  expiresAt: number
  /** Answers not yet taken by the runner. */
  answers: Map<string, Record<string, unknown>>
  wake?: () => void
}

interface Waiter {
  resolve: (answer: ClientAnswer) => void
  reject: (err: unknown) => void
}

/** The embedded default {@link Store}: one process, bounded, lost on restart. */
export class MemoryStore implements Store {
  readonly limits: StoreLimits
  readonly #connections = new Map<string, Connection>()
  readonly #subscribers = new Map<string, Set<string>>()
  readonly #waiters = new Map<string, Waiter>()
  readonly #early = new Map<string, ClientAnswer>()
  readonly #cancelListeners = new Set<(owner: string, requestId: string, reason: string | undefined) => void>()
  readonly #updateListeners = new Set<(uri: string) => void>()
  readonly #sessions = new Map<string, number>()
  readonly #tasks = new Map<string, StoredTask>()
  #nextTaskSweep = 0
  readonly #idempotent = new Map<string, { digest: string; response?: string; expiresAt: number }>()

  constructor(limits: Partial<StoreLimits> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...limits }
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
    if (subs.size >= this.limits.maxSubscriptions) {
      throw new TooManySubscriptions(this.limits.maxSubscriptions)
    }
    subs.add(uri)
    let owners = this.#subscribers.get(uri)
    if (owners === undefined) this.#subscribers.set(uri, (owners = new Set()))
    owners.add(owner)
    return true
  }

  async unsubscribe(owner: string, uri: string): Promise<boolean> {
    const removed = this.#connections.get(owner)?.subscriptions.delete(uri) ?? false
    if (removed) this.#dropSubscriber(uri, owner)
    return removed
  }

  async subscriptions(owner: string): Promise<string[]> {
    return [...(this.#connections.get(owner)?.subscriptions ?? [])]
  }

  async subscribers(uri: string): Promise<string[]> {
    return [...(this.#subscribers.get(uri) ?? [])]
  }

  async setLegacyClient(owner: string, client: LegacyClient): Promise<void> {
    this.#connection(owner).legacyClient = client
  }

  async getLegacyClient(owner: string): Promise<LegacyClient | undefined> {
    return this.#connections.get(owner)?.legacyClient
  }

  async pushNotification(owner: string, message: ServerMessage): Promise<void> {
    this.#enqueue(this.#connection(owner), message, Date.now())
  }

  async broadcast(message: ServerMessage): Promise<void> {
    // Not through #connection(): a broadcast is no use of a connection, and must not reorder the
    // map it walks (a re-inserted key would be visited again, forever).
    const at = Date.now()
    for (const c of this.#connections.values()) this.#enqueue(c, message, at)
  }

  #enqueue(c: Connection, message: ServerMessage, at: number): void {
    c.queue.push({ message, at })
    if (c.queue.length > this.limits.maxNotifications) c.queue.shift()
  }

  async takeNotifications(owner: string): Promise<NotificationGroup | undefined> {
    const c = this.#connections.get(owner)
    if (c === undefined) return undefined
    if (c.group !== undefined) return c.group
    const fresh = Date.now() - this.limits.notificationTtlMs
    while (c.queue.length > 0 && c.queue[0]!.at < fresh) c.queue.shift()
    if (c.queue.length === 0) return undefined
    const batch = c.queue.splice(0, this.limits.notificationBatch)
    c.group = { id: randomUUID(), notifications: batch.map((q) => q.message) }
    return c.group
  }

  async ackNotifications(owner: string, groupId: string): Promise<boolean> {
    const c = this.#connections.get(owner)
    if (c === undefined) return false
    if (c.group?.id === groupId) {
      c.group = undefined
      c.lastAcked = groupId
      return true
    }
    return c.lastAcked === groupId
  }

  async enqueueRequest(owner: string, id: string, request: ServerMessage): Promise<void> {
    const requests = this.#connection(owner).requests
    if (requests.size >= this.limits.maxRequests) {
      const oldestActive = [...requests.values()].find((r) => r.deliveredAt === undefined)
      if (!this.limits.discardOldestRequests || oldestActive === undefined) throw new QueueFull(this.limits.maxRequests)
      requests.delete(oldestActive.id)
      this.#settle(owner, oldestActive.id, DISCARDED)
    }
    requests.set(id, { id, request, createdAt: Date.now(), deliveries: 0 })
  }

  async claimRequest(owner: string): Promise<QueuedRequest | undefined> {
    const c = this.#connections.get(owner)
    if (c === undefined) return undefined
    const now = Date.now()
    for (const r of c.requests.values()) {
      if (r.deliveredAt === undefined || now - r.deliveredAt >= this.limits.redeliveryMs) {
        r.deliveredAt = now
        r.deliveries++
        return { ...r }
      }
    }
    return undefined
  }

  async getRequest(owner: string, id: string): Promise<QueuedRequest | undefined> {
    const r = this.#connections.get(owner)?.requests.get(id)
    return r === undefined ? undefined : { ...r }
  }

  async completeRequest(owner: string, id: string, answer: ClientAnswer): Promise<boolean> {
    const requests = this.#connections.get(owner)?.requests
    if (requests === undefined || !requests.delete(id)) return false
    this.#settle(owner, id, answer)
    return true
  }

  awaitAnswer(owner: string, id: string, signal: AbortSignal, timeoutMs: number): Promise<ClientAnswer> {
    const key = `${owner}\0${id}`
    const early = this.#early.get(key)
    if (early !== undefined) {
      this.#early.delete(key)
      return Promise.resolve(early)
    }
    return new Promise<ClientAnswer>((resolve, reject) => {
      const withdraw = (err: unknown) => {
        cleanup()
        this.#connections.get(owner)?.requests.delete(id)
        reject(err)
      }
      const onAbort = () => withdraw(signal.reason)
      const timer = setTimeout(() => withdraw(new AnswerTimeout(`The client did not answer within ${timeoutMs} ms`)), timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        this.#waiters.delete(key)
      }
      if (signal.aborted) return withdraw(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      this.#waiters.set(key, {
        resolve: (answer) => {
          cleanup()
          resolve(answer)
        },
        reject: withdraw
      })
    })
  }

  async publishCancel(owner: string, requestId: string, reason: string | undefined): Promise<void> {
    for (const l of this.#cancelListeners) l(owner, requestId, reason)
  }

  onCancel(listener: (owner: string, requestId: string, reason: string | undefined) => void): () => void {
    this.#cancelListeners.add(listener)
    return () => this.#cancelListeners.delete(listener)
  }

  async publishResourceUpdated(uri: string): Promise<void> {
    for (const l of this.#updateListeners) l(uri)
  }

  onResourceUpdated(listener: (uri: string) => void): () => void {
    this.#updateListeners.add(listener)
    return () => this.#updateListeners.delete(listener)
  }

  async createTask(owner: string, task: TaskRecord): Promise<void> {
    const now = Date.now()
    // Expired tasks are swept at most once a second, or when the map is full: a sweep on every
    // create made creating a task cost as much as walking every task kept (~150 µs at a few thousand).
    if (now >= this.#nextTaskSweep || this.#tasks.size >= this.limits.maxTasks) {
      this.#nextTaskSweep = now + 1000
      for (const [key, t] of this.#tasks) if (t.expiresAt <= now) this.#tasks.delete(key)
    }
    if (this.#tasks.size >= this.limits.maxTasks) {
      throw new TooManyTasks(this.limits.maxTasks)
    }
    this.#tasks.set(`${owner}\0${task.taskId}`, { record: copy(task), expiresAt: now + task.ttlMs, answers: new Map() })
  }

  async getTask(owner: string, taskId: string): Promise<TaskRecord | undefined> {
    const t = this.#task(owner, taskId)
    return t === undefined ? undefined : copy(t.record)
  }

  async updateTask(owner: string, taskId: string, patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>): Promise<TaskRecord | undefined> {
    const t = this.#task(owner, taskId)
    if (t === undefined || TERMINAL.has(t.record.status)) return undefined
    Object.assign(t.record, copy(patch), { lastUpdatedAt: new Date().toISOString() })
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete t.record[k as keyof TaskRecord]
    return copy(t.record)
  }

  async answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined> {
    const t = this.#task(owner, taskId)
    if (t === undefined) return undefined
    const outstanding = t.record.inputRequests ?? {}
    const taken = Object.keys(responses).filter((k) => Object.hasOwn(outstanding, k))
    if (taken.length === 0) return taken
    for (const k of taken) {
      t.answers.set(k, responses[k]!)
      delete outstanding[k]
    }
    const remaining = Object.keys(outstanding).length
    const patch: Partial<TaskRecord> = remaining === 0 ? { status: 'working', inputRequests: undefined } : { inputRequests: outstanding }
    await this.updateTask(owner, taskId, patch)
    t.wake?.()
    return taken
  }

  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const t = this.#task(owner, taskId)
        if (t === undefined) return finish(new Error('The task is gone'))
        if (!keys.every((k) => t.answers.has(k))) return
        const out: Record<string, Record<string, unknown>> = {}
        for (const k of keys) {
          out[k] = t.answers.get(k)!
          t.answers.delete(k)
        }
        finish(undefined, out)
      }
      const onAbort = () => finish(signal.reason)
      const finish = (err: unknown, out?: Record<string, Record<string, unknown>>) => {
        signal.removeEventListener('abort', onAbort)
        const t = this.#task(owner, taskId)
        if (t !== undefined) t.wake = undefined
        if (err === undefined) resolve(out!)
        else reject(err)
      }
      if (signal.aborted) return reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      const t = this.#task(owner, taskId)
      if (t !== undefined) t.wake = check
      check()
    })
  }

  #task(owner: string, taskId: string): StoredTask | undefined {
    const key = `${owner}\0${taskId}`
    const t = this.#tasks.get(key)
    if (t !== undefined && t.expiresAt <= Date.now()) {
      this.#tasks.delete(key)
      return undefined
    }
    return t
  }

  async createSession(): Promise<string> {
    const id = randomBytes(18).toString('base64url')
    if (this.#sessions.size >= this.limits.maxConnections) this.#sessions.delete(this.#sessions.keys().next().value!)
    this.#sessions.set(id, Date.now() + this.limits.sessionTtlMs)
    return id
  }

  async hasSession(id: string): Promise<boolean> {
    const expires = this.#sessions.get(id)
    if (expires === undefined) return false
    this.#sessions.delete(id)
    if (expires < Date.now()) return false
    this.#sessions.set(id, Date.now() + this.limits.sessionTtlMs)
    return true
  }

  async beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    const key = `${owner}\0${requestId}`
    const now = Date.now()
    const r = this.#idempotent.get(key)
    if (r !== undefined && r.expiresAt > now) {
      if (r.digest !== digest) return { state: 'conflict' }
      return r.response === undefined ? { state: 'in_progress' } : { state: 'done', response: r.response }
    }
    this.#idempotent.delete(key)
    if (this.#idempotent.size >= this.limits.maxIdempotencyRecords) {
      for (const [k, v] of this.#idempotent) if (v.expiresAt <= now) this.#idempotent.delete(k)
      let first: [string, { expiresAt: number }] | undefined
      for (const e of this.#idempotent) if (first === undefined || e[1].expiresAt < first[1].expiresAt) first = e
      if (first !== undefined && this.#idempotent.size >= this.limits.maxIdempotencyRecords) this.#idempotent.delete(first[0])
    }
    this.#idempotent.set(key, { digest, expiresAt: now + leaseMs })
    return { state: 'new' }
  }

  async renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    const r = this.#idempotent.get(`${owner}\0${requestId}`)
    if (r === undefined || r.response !== undefined || r.expiresAt <= Date.now()) return false
    r.expiresAt = Date.now() + leaseMs
    return true
  }

  async finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    const r = this.#idempotent.get(`${owner}\0${requestId}`)
    if (r === undefined || r.expiresAt <= Date.now()) return
    r.response = response
    r.expiresAt = Date.now() + ttlMs
  }

  async abandonIdempotent(owner: string, requestId: string): Promise<void> {
    this.#idempotent.delete(`${owner}\0${requestId}`)
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    for (const w of [...this.#waiters.values()]) w.reject(new Error('The store is closing'))
    this.#idempotent.clear()
    this.#connections.clear()
    this.#subscribers.clear()
    this.#sessions.clear()
    this.#early.clear()
    this.#tasks.clear()
  }

  #settle(owner: string, id: string, answer: ClientAnswer): void {
    const key = `${owner}\0${id}`
    const waiter = this.#waiters.get(key)
    if (waiter !== undefined) waiter.resolve(answer)
    else this.#early.set(key, answer)
  }

  #dropSubscriber(uri: string, owner: string): void {
    const owners = this.#subscribers.get(uri)
    owners?.delete(owner)
    if (owners?.size === 0) this.#subscribers.delete(uri)
  }

  #connection(owner: string): Connection {
    let c = this.#connections.get(owner)
    if (c === undefined) {
      c = { subscriptions: new Set(), queue: [], requests: new Map() }
      if (this.#connections.size >= this.limits.maxConnections) {
        // Map iteration order is insertion order: the first key is the least recently touched.
        const [oldest, gone] = this.#connections.entries().next().value!
        this.#connections.delete(oldest)
        for (const uri of gone.subscriptions) this.#dropSubscriber(uri, oldest)
      }
    } else {
      this.#connections.delete(owner)
    }
    this.#connections.set(owner, c)
    return c
  }
}

/**
 * A deep copy of a task record or patch (the store never shares its objects with callers, as Redis
 * would not): plain objects and arrays are copied, anything else is kept as it is. structuredClone
 * did the same for ~2 µs a call, four calls a task.
 */
function copy<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copy) as T
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = copy(v)
  return out as T
}
