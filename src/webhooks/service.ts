import { randomBytes } from 'node:crypto'
import { errors } from '../errors.js'
import type { ServerMessage } from '../store/types.js'
import { Sender } from './deliver.js'
import { backoff, resolveOptions, type ResolvedWebhookOptions, type WebhookOptions } from './options.js'
import { newSecret } from './sign.js'
import { checkName, checkUrl, RefusedTarget } from './ssrf.js'
import type { ClaimedDelivery, DeliveryAttempt, PendingDelivery, WebhookRecord, WebhookStore } from './types.js'

/** A webhook as its owner sees it: everything but the secret and the owner. */
export type WebhookView = Omit<WebhookRecord, 'secret' | 'owner'>

/** Where a message goes when no webhook takes it: the connection's `/notifications` queue. */
export interface NotificationQueue {
  pushNotification(owner: string, notification: ServerMessage): Promise<void>
}

/** Logs what the owner cannot see (a store error in the background worker). */
export interface WebhookLog {
  warn(obj: object, msg: string): void
}

const view = ({ secret: _s, owner: _o, ...rest }: WebhookRecord): WebhookView => rest
const newId = (prefix: string) => prefix + randomBytes(16).toString('base64url')

/**
 * Webhooks of logical connections: registration, and delivery of their notifications with retries.
 * `offer` is the one interception point: a notification an active webhook wants is delivered instead
 * of queued; one that runs out of attempts is queued after all (`queue.pushNotification`).
 * @example
 * const service = new WebhookService(new MemoryWebhookStore(), store, { allowedHosts: ['127.0.0.1:8080'] }, log)
 * service.start()
 * const { secret } = await service.register('alice', { url: 'http://127.0.0.1:8080/hook' })
 */
export class WebhookService {
  readonly options: ResolvedWebhookOptions
  readonly #sender: Sender
  #timer: NodeJS.Timeout | undefined
  #running = false
  #ticking = false
  #again = false
  readonly #inflight = new Set<Promise<void>>()

  constructor(
    readonly store: WebhookStore,
    readonly queue: NotificationQueue,
    options: WebhookOptions,
    readonly log: WebhookLog
  ) {
    this.options = resolveOptions(options)
    this.#sender = new Sender(this.options.allowedHosts, this.options.timeoutMs)
  }

  /** Register a webhook for `owner`: 400 -32602 naming the rule a URL breaks, or the limit reached. */
  async register(owner: string, input: { url: string; events?: string[] | undefined }): Promise<WebhookView & { secret: string }> {
    try {
      const { name } = checkUrl(input.url, this.options.allowedHosts)
      if (name !== undefined) await checkName(name)
    } catch (err) {
      if (err instanceof RefusedTarget) throw errors.invalidParams(err.message)
      throw err
    }
    const events = input.events === undefined ? undefined : [...new Set(input.events)]
    const record: WebhookRecord = {
      id: newId('wh_'),
      owner,
      url: input.url,
      ...(events === undefined ? {} : { events }),
      createdAt: new Date().toISOString(),
      secret: newSecret(),
      status: 'active',
      consecutiveFailures: 0
    }
    if (!(await this.store.addWebhook(record, this.options.maxWebhooks))) {
      throw errors.invalidParams(`Too many webhooks (limit ${this.options.maxWebhooks}): delete one first`)
    }
    return { ...view(record), secret: record.secret }
  }

  async list(owner: string): Promise<WebhookView[]> {
    return (await this.store.webhooks(owner)).map(view)
  }

  /** One webhook; 404 when unknown or another connection's. */
  async get(owner: string, id: string): Promise<WebhookView> {
    return view(await this.#find(owner, id))
  }

  /** Delete a webhook; what it had pending goes to /notifications. 404 when unknown. */
  async delete(owner: string, id: string): Promise<void> {
    const pending = await this.store.removeWebhook(owner, id)
    if (pending === undefined) throw notFound(id)
    await this.#requeue(pending)
  }

  /** The recent attempts, newest first. 404 when unknown. */
  async deliveries(owner: string, id: string): Promise<DeliveryAttempt[]> {
    await this.#find(owner, id)
    return this.store.attempts(id)
  }

  /**
   * Take a notification for delivery: true when every active webhook of `owner` that wants it took
   * it; false when none wants it, or one had no room (the caller queues it then).
   */
  async offer(owner: string, notification: ServerMessage): Promise<boolean> {
    const hooks = (await this.store.webhooks(owner)).filter(
      (h) => h.status === 'active' && (h.events === undefined || h.events.includes(notification.method))
    )
    if (hooks.length === 0) return false
    const body = JSON.stringify({ jsonrpc: '2.0', ...notification })
    const limits = { maxPending: this.options.maxPending, maxPendingBytes: this.options.maxPendingBytes }
    let all = true
    for (const h of hooks) {
      const taken = await this.store.enqueue({ id: newId('msg_'), webhookId: h.id, owner, body, attempts: 0, createdAt: Date.now() }, limits)
      all &&= taken
    }
    this.#kick()
    return all
  }

  /** Start delivering: due deliveries are looked for every `pollMs`, and at once after an offer. */
  start(): void {
    this.#running = true
    this.#timer = setInterval(() => this.#kick(), this.options.pollMs).unref()
    this.#kick()
  }

  /** Stop taking deliveries and wait for the attempts in flight. */
  async stop(): Promise<void> {
    this.#running = false
    clearInterval(this.#timer)
    while (this.#ticking || this.#inflight.size > 0) await Promise.race([...this.#inflight, new Promise((r) => setTimeout(r, 5))])
    await this.#sender.close()
  }

  async #find(owner: string, id: string): Promise<WebhookRecord> {
    const hook = await this.store.webhook(owner, id)
    if (hook === undefined) throw notFound(id)
    return hook
  }

  #kick(): void {
    if (!this.#running) return
    if (this.#ticking) {
      this.#again = true
      return
    }
    this.#ticking = true
    void this.#tick().finally(() => {
      this.#ticking = false
      if (this.#again) {
        this.#again = false
        this.#kick()
      }
    })
  }

  async #tick(): Promise<void> {
    const room = this.options.concurrency - this.#inflight.size
    if (room <= 0) return
    let due: ClaimedDelivery[]
    try {
      due = await this.store.claim(Date.now(), this.options.leaseMs, room)
    } catch (err) {
      this.log.warn({ err }, 'webhooks: could not claim deliveries')
      return
    }
    for (const d of due) {
      const p: Promise<void> = this.#attempt(d)
        .catch((err: unknown) => this.log.warn({ err, webhook: d.webhookId }, 'webhooks: a delivery could not be settled'))
        .finally(() => {
          this.#inflight.delete(p)
          this.#kick()
        })
      this.#inflight.add(p)
    }
  }

  async #attempt(d: ClaimedDelivery): Promise<void> {
    const hook = await this.store.webhook(d.owner, d.webhookId)
    if (hook === undefined || hook.status !== 'active') {
      // Deleted or disabled: what it had pending was handed back then. Left over is only a message
      // queued meanwhile (it still holds its lease): that one goes back now.
      if (await this.store.finish(d)) await this.#requeue([d])
      return
    }
    const at = new Date().toISOString()
    const result = await this.#sender.send(hook.url, hook.secret, d.id, d.body)
    const attempt = d.attempts + 1
    const log: DeliveryAttempt = { messageId: d.id, attempt, at, status: 'delivered', durationMs: result.durationMs }
    if (result.responseStatus !== undefined) log.responseStatus = result.responseStatus
    if (result.error !== undefined) log.error = result.error
    const o = this.options
    if (result.ok) {
      await this.store.finish(d)
      await this.store.logAttempt(d.webhookId, log, o.keepAttempts)
      await this.store.settle(d.owner, d.webhookId, true, o.disableAfter, '')
      return
    }
    if (!result.gone && attempt < o.attempts) {
      const next = Date.now() + backoff(o, attempt)
      await this.store.retry({ ...d, attempts: attempt }, next)
      await this.store.logAttempt(d.webhookId, { ...log, status: 'retrying', nextRetryAt: new Date(next).toISOString() }, o.keepAttempts)
      return
    }
    await this.#giveBack(d)
    await this.store.logAttempt(d.webhookId, { ...log, status: 'returned' }, o.keepAttempts)
    const reason = result.gone
      ? 'The receiver answered 410 Gone'
      : `${o.disableAfter} messages in a row failed every attempt; the last: ${result.error}`
    const after = await this.store.settle(d.owner, d.webhookId, false, result.gone ? 0 : o.disableAfter, reason)
    if (after?.status === 'disabled') await this.#requeue(await this.store.drain(d.webhookId))
  }

  /** Queue the message on /notifications first, then forget the delivery: a crash between repeats it, never loses it. */
  async #giveBack(d: ClaimedDelivery): Promise<void> {
    await this.#requeue([d])
    await this.store.finish(d)
  }

  async #requeue(pending: PendingDelivery[]): Promise<void> {
    for (const d of pending) {
      const { jsonrpc: _j, ...message } = JSON.parse(d.body) as ServerMessage & { jsonrpc: string }
      await this.queue.pushNotification(d.owner, message)
    }
  }
}

function notFound(id: string) {
  return errors.notFound(`Unknown webhook: ${id.slice(0, 64)}`)
}
