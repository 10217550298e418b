import { randomUUID } from 'node:crypto'
import { DISCARDED, QueueFull } from './store-errors.js'
import type { RedisCore } from './redis-core.js'
import type { ClientAnswer, Mailbox, NotificationGroup, QueuedRequest, ServerMessage } from './types.js'
import { PART, REGISTRY } from './redis-keys.js'

/**
 * A group as `mcpTake` keeps it, `{"id":<id>,"notifications":[...]}`, the notifications' JSON as
 * they were queued: `GET /notifications` sends that array as it is (`json`), and only a reader of
 * `notifications` pays for decoding it.
 */
class StoredGroup implements NotificationGroup {
  readonly id: string
  readonly json: string
  #notifications: ServerMessage[] | undefined

  constructor(group: string) {
    const at = group.indexOf(',"notifications":')
    this.id = JSON.parse(group.slice(6, at)) as string
    this.json = group.slice(at + 17, -1)
  }

  get notifications(): ServerMessage[] {
    return (this.#notifications ??= JSON.parse(this.json) as ServerMessage[])
  }
}

/** A {@link RedisStore}'s mailbox: notifications to each connection, and server-to-client requests with their answers. */
export class RedisMailbox implements Mailbox {
  readonly #r: RedisCore

  constructor(core: RedisCore) {
    this.#r = core
  }

  async pushNotification(owner: string, notification: ServerMessage): Promise<void> {
    const { maxNotifications, notificationTtlMs, maxNotificationBytes } = this.#r.limits
    const push = this.#r.write('mcpPush', this.#r.keys.conn(owner), JSON.stringify(notification), maxNotifications, notificationTtlMs, 1, maxNotificationBytes)
    await Promise.all([this.#r.use(owner), push])
  }

  /**
   * One read of the registry for the live connections, then one push per connection on its own
   * slot (pipelined per node): O(connections) commands, the price of a queue per connection.
   */
  async broadcast(notification: ServerMessage, except?: ReadonlySet<string>): Promise<void> {
    const { maxNotifications, notificationTtlMs, maxNotificationBytes } = this.#r.limits
    const json = JSON.stringify(notification)
    const live = (await this.#r.run('mcpLive', this.#r.keys.registry(REGISTRY.connections))) as string[]
    const owners = except === undefined ? live : live.filter((o) => !except.has(o))
    await Promise.all(owners.map((o) => this.#r.write('mcpPush', this.#r.keys.conn(o), json, maxNotifications, notificationTtlMs, 0, maxNotificationBytes)))
  }

  async takeNotifications(owner: string): Promise<NotificationGroup | undefined> {
    const { notificationBatch, notificationTtlMs } = this.#r.limits
    const json = (await this.#r.run('mcpTake', this.#r.keys.conn(owner), randomUUID(), notificationBatch, notificationTtlMs)) as string | null
    // Mostly nothing: a polling connection is kept alive once per half TTL, after the take, not in
    // the same tick (auto-pipelined with it, a MOVED during a failover is not followed).
    const kept = this.#r.stillHere(owner)
    if (kept !== undefined) await kept
    return json === null ? undefined : new StoredGroup(json)
  }

  async ackNotifications(owner: string, groupId: string): Promise<boolean> {
    return (await this.#r.write('mcpAck', this.#r.keys.conn(owner), groupId)) === 1
  }

  async enqueueRequest(owner: string, id: string, request: ServerMessage): Promise<void> {
    const discarded = JSON.stringify(DISCARDED)
    const { maxRequests, maxRequestBytes, discardOldestRequests } = this.#r.limits
    const args = [id, JSON.stringify(request), maxRequests, discardOldestRequests ? 1 : 0, this.#r.answerTtlMs, discarded, maxRequestBytes]
    const [, outcome] = await Promise.all([this.#r.use(owner), this.#r.write('mcpEnqueue', this.#r.keys.conn(owner), ...args)])
    if (outcome === 'FULL') throw new QueueFull(maxRequests)
    if (outcome === 'FULLB') throw new QueueFull(maxRequestBytes, 'bytes waiting')
  }

  async claimRequest(owner: string): Promise<QueuedRequest | undefined> {
    const r = (await this.#r.run('mcpClaim', this.#r.keys.conn(owner), this.#r.limits.redeliveryMs)) as [string, string, string, string, string] | null
    if (r === null) return undefined
    return { id: r[0], request: JSON.parse(r[1]) as ServerMessage, createdAt: Number(r[2]), deliveredAt: Number(r[3]), deliveries: Number(r[4]) }
  }

  async getRequest(owner: string, id: string): Promise<QueuedRequest | undefined> {
    const c = (part: (typeof PART)[keyof typeof PART]) => this.#r.keys.conn(owner, part)
    const [[, json], [, state]] = (await this.#r.guard(() => this.#r.client.multi().hget(c(PART.requestMessages), id).hget(c(PART.requestStates), id).exec())) as [unknown, string | null][]
    if (json === null || state === null) return undefined
    const [createdAt, deliveredAt, deliveries] = state!.split(' ')
    const out: QueuedRequest = { id, request: JSON.parse(json!) as ServerMessage, createdAt: Number(createdAt), deliveries: Number(deliveries) }
    if (deliveredAt !== '-') out.deliveredAt = Number(deliveredAt)
    return out
  }

  async completeRequest(owner: string, id: string, answer: ClientAnswer): Promise<boolean> {
    return (await this.#r.write('mcpComplete', this.#r.keys.conn(owner), id, JSON.stringify(answer), this.#r.answerTtlMs)) === 1
  }

  /** Waits on the connection's wake-up channel for the answer key `P a:{h}:<id>` (see `mcpComplete`). */
  awaitAnswer(owner: string, id: string, signal: AbortSignal, timeoutMs: number): Promise<ClientAnswer> {
    const name = this.#r.keys.answer(owner, id)
    return this.#r.bus
      .wait<ClientAnswer>(this.#r.keys.connWake(owner), name, signal, timeoutMs, async () => {
        const json = await this.#r.guard(() => this.#r.client.getdel(name))
        return json === null ? undefined : { value: JSON.parse(json) as ClientAnswer }
      })
      .catch(async (err: unknown) => {
        // Nobody waits any more: the client must not be asked (or answer) in vain.
        await this.#r.run('mcpWithdraw', this.#r.keys.conn(owner), id).catch(() => undefined)
        throw err
      })
  }
}
