import { randomBytes, randomUUID } from 'node:crypto'
import { DISCARDED, QueueFull, TooManySubscriptions } from './store-errors.js'
import { AnswerWaiters } from './memory-answers.js'
import { admitsLog, type LoggingLevel } from '../schema/lifecycle.js'
import type { ClientAnswer, ConnectionStore, LegacyClient, Mailbox, NotificationGroup, QueuedRequest, ServerMessage, StoreLimits } from './types.js'

interface Connection {
  logLevel?: LoggingLevel
  subscriptions: Set<string>
  legacyClient?: LegacyClient
  /** Undelivered notifications, oldest first, with their size (JSON text), and the sum of those. */
  queue: { message: ServerMessage; at: number; bytes: number }[]
  queueBytes: number
  group?: NotificationGroup
  /** Bytes of the group handed out and not yet acknowledged. */
  groupBytes: number
  lastAcked?: string
  /** Active and pending requests, oldest first (Map keeps insertion order), and their bytes (JSON text). */
  requests: Map<string, QueuedRequest & { bytes: number }>
  requestBytes: number
}

/*
 * Past ~8 KB on purpose: both roles of a connection (its settings, and its mailbox: the notification
 * queue and the request queue) live on one entry of one LRU table, bounded by maxConnections, and
 * splitting them would mean several tables to keep in step. So one object is a MemoryStore's
 * `connections` and its `mailbox`. What does not live on a connection is in its own module
 * (memory-tasks.ts, memory-idempotency.ts, memory-answers.ts).
 */
/** A {@link MemoryStore}'s logical connections: their settings ({@link ConnectionStore}) and their {@link Mailbox}. */
export class MemoryConnections implements ConnectionStore, Mailbox {
  readonly limits: StoreLimits
  readonly #connections = new Map<string, Connection>()
  readonly #subscribers = new Map<string, Set<string>>()
  readonly #answers = new AnswerWaiters()
  readonly #sessions = new Map<string, number>()
  /** Bytes of every connection's queued and handed-out notifications (see `maxNotificationBytesTotal`). */
  #notificationBytes = 0

  constructor(limits: StoreLimits) {
    this.limits = limits
  }

  async setLogLevel(owner: string, level: LoggingLevel): Promise<void> {
    this.#connection(owner).logLevel = level
  }

  async getLogLevel(owner: string): Promise<LoggingLevel | undefined> {
    return this.#connections.get(owner)?.logLevel
  }

  async loggers(level: LoggingLevel): Promise<string[]> {
    const out: string[] = []
    for (const [owner, c] of this.#connections) if (admitsLog(c.logLevel, level)) out.push(owner)
    return out
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
    this.#enqueue(this.#connection(owner), message, Date.now(), JSON.stringify(message).length)
  }

  async broadcast(message: ServerMessage, except?: ReadonlySet<string>): Promise<void> {
    // Not through #connection(): a broadcast is no use of a connection, and must not reorder the
    // map it walks (a re-inserted key would be visited again, forever).
    const at = Date.now()
    const bytes = JSON.stringify(message).length
    for (const [owner, c] of this.#connections) if (except?.has(owner) !== true) this.#enqueue(c, message, at, bytes, false)
    this.#level()
  }

  /** Beyond the bounds (count, bytes) the oldest go: a client that never polls loses the oldest news. */
  #enqueue(c: Connection, message: ServerMessage, at: number, bytes: number, level = true): void {
    c.queue.push({ message, at, bytes })
    c.queueBytes += bytes
    this.#notificationBytes += bytes
    while (c.queue.length > this.limits.maxNotifications || c.queueBytes > this.limits.maxNotificationBytes) this.#shift(c)
    if (level) this.#level()
  }

  #shift(c: Connection): void {
    const bytes = c.queue.shift()!.bytes
    c.queueBytes -= bytes
    this.#notificationBytes -= bytes
  }

  /**
   * Past `maxNotificationBytesTotal`, lower the largest queues to one level, oldest first, until 90%
   * of it is left (so that a store kept at its bound does not sort on every push): whoever holds the
   * most loses, never a client within its fair share.
   */
  #level(): void {
    const bound = this.limits.maxNotificationBytesTotal
    if (this.#notificationBytes <= bound) return
    const need = this.#notificationBytes - Math.floor(bound * 0.9)
    const queues = [...this.#connections.values()].filter((c) => c.queueBytes > 0).sort((a, b) => b.queueBytes - a.queueBytes)
    // The level L at which the k largest queues, cut to L, give up `need` bytes.
    let sum = 0
    let k = 0
    let level = 0
    while (k < queues.length) {
      sum += queues[k]!.queueBytes
      k++
      const next = k < queues.length ? queues[k]!.queueBytes : 0
      if (sum - k * next >= need) {
        level = Math.max(0, Math.floor((sum - need) / k))
        break
      }
    }
    for (const c of queues.slice(0, k)) while (c.queueBytes > level && c.queue.length > 0) this.#shift(c)
  }

  async takeNotifications(owner: string): Promise<NotificationGroup | undefined> {
    const c = this.#connections.get(owner)
    if (c === undefined) return undefined
    if (c.group !== undefined) return c.group
    const fresh = Date.now() - this.limits.notificationTtlMs
    while (c.queue.length > 0 && c.queue[0]!.at < fresh) this.#shift(c)
    if (c.queue.length === 0) return undefined
    const batch = c.queue.splice(0, this.limits.notificationBatch)
    for (const q of batch) c.queueBytes -= q.bytes
    c.groupBytes = batch.reduce((n, q) => n + q.bytes, 0)
    c.group = { id: randomUUID(), notifications: batch.map((q) => q.message) }
    return c.group
  }

  async ackNotifications(owner: string, groupId: string): Promise<boolean> {
    const c = this.#connections.get(owner)
    if (c === undefined) return false
    if (c.group?.id === groupId) {
      c.group = undefined
      this.#notificationBytes -= c.groupBytes
      c.groupBytes = 0
      c.lastAcked = groupId
      return true
    }
    return c.lastAcked === groupId
  }

  async enqueueRequest(owner: string, id: string, request: ServerMessage): Promise<void> {
    const c = this.#connection(owner)
    const requests = c.requests
    const bytes = JSON.stringify(request).length
    const { maxRequests, maxRequestBytes } = this.limits
    const full = () => (requests.size >= maxRequests ? new QueueFull(maxRequests) : new QueueFull(maxRequestBytes, 'bytes waiting'))
    if (bytes > maxRequestBytes) throw full()
    while (requests.size >= maxRequests || c.requestBytes + bytes > maxRequestBytes) {
      const oldestActive = [...requests.values()].find((r) => r.deliveredAt === undefined)
      if (!this.limits.discardOldestRequests || oldestActive === undefined) throw full()
      this.#withdraw(c, oldestActive.id)
      this.#answers.settle(`${owner}\0${oldestActive.id}`, DISCARDED)
    }
    requests.set(id, { id, request, createdAt: Date.now(), deliveries: 0, bytes })
    c.requestBytes += bytes
  }

  /** Take a request off its queue; false when it was not there. */
  #withdraw(c: Connection | undefined, id: string): boolean {
    const r = c?.requests.get(id)
    if (r === undefined) return false
    c!.requests.delete(id)
    c!.requestBytes -= r.bytes
    return true
  }

  async claimRequest(owner: string): Promise<QueuedRequest | undefined> {
    const c = this.#connections.get(owner)
    if (c === undefined) return undefined
    const now = Date.now()
    for (const r of c.requests.values()) {
      if (r.deliveredAt === undefined || now - r.deliveredAt >= this.limits.redeliveryMs) {
        r.deliveredAt = now
        r.deliveries++
        return view(r)
      }
    }
    return undefined
  }

  async getRequest(owner: string, id: string): Promise<QueuedRequest | undefined> {
    const r = this.#connections.get(owner)?.requests.get(id)
    return r === undefined ? undefined : view(r)
  }

  async completeRequest(owner: string, id: string, answer: ClientAnswer): Promise<boolean> {
    if (!this.#withdraw(this.#connections.get(owner), id)) return false
    this.#answers.settle(`${owner}\0${id}`, answer)
    return true
  }

  awaitAnswer(owner: string, id: string, signal: AbortSignal, timeoutMs: number): Promise<ClientAnswer> {
    return this.#answers.wait(`${owner}\0${id}`, signal, timeoutMs, () => this.#withdraw(this.#connections.get(owner), id))
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

  /** The store closes: every wait ends, everything is forgotten. */
  clear(): void {
    this.#answers.close()
    this.#connections.clear()
    this.#notificationBytes = 0
    this.#subscribers.clear()
    this.#sessions.clear()
  }

  #dropSubscriber(uri: string, owner: string): void {
    const owners = this.#subscribers.get(uri)
    owners?.delete(owner)
    if (owners?.size === 0) this.#subscribers.delete(uri)
  }

  #connection(owner: string): Connection {
    let c = this.#connections.get(owner)
    if (c === undefined) {
      c = { subscriptions: new Set(), queue: [], queueBytes: 0, groupBytes: 0, requests: new Map(), requestBytes: 0 }
      if (this.#connections.size >= this.limits.maxConnections) {
        // Map iteration order is insertion order: the first key is the least recently touched.
        const [oldest, gone] = this.#connections.entries().next().value!
        this.#connections.delete(oldest)
        this.#notificationBytes -= gone.queueBytes + gone.groupBytes
        for (const uri of gone.subscriptions) this.#dropSubscriber(uri, oldest)
      }
    } else {
      this.#connections.delete(owner)
    }
    this.#connections.set(owner, c)
    return c
  }
}

/** A queued request as callers see it: a copy, without the store's bookkeeping. */
function view({ bytes: _bytes, ...r }: QueuedRequest & { bytes: number }): QueuedRequest {
  return r
}
