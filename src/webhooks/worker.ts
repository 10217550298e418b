import type { ServerMessage } from '../store/types.js'
import { Sender } from './deliver.js'
import { backoff, type ResolvedWebhookOptions } from './options.js'
import { listening, reportDelivery, type DeliveryEvent } from './observe.js'
import type { ClaimedDelivery, DeliveryAttempt, PendingDelivery, WebhookStore } from './types.js'

/** Where a message goes when no webhook takes it: the connection's `/notifications` queue. */
export interface NotificationQueue {
  pushNotification(owner: string, notification: ServerMessage): Promise<void>
}

/** Logs what the owner cannot see (a store error in the background worker). */
export interface WebhookLog {
  warn(obj: object, msg: string): void
}

/** Put messages back on their connections' `/notifications` queues. */
export async function requeue(queue: NotificationQueue, pending: PendingDelivery[]): Promise<void> {
  for (const d of pending) {
    const { jsonrpc: _j, ...message } = JSON.parse(d.body) as ServerMessage & { jsonrpc: string }
    await queue.pushNotification(d.owner, message)
  }
}

/**
 * The delivery loop of one instance: claims due deliveries (leased, so no other instance attempts
 * them meanwhile), at most `concurrency` at once, and settles each: acknowledged, retried later,
 * or given back to /notifications (and the webhook perhaps disabled).
 */
export class DeliveryWorker {
  readonly #sender: Sender
  #timer: NodeJS.Timeout | undefined
  #running = false
  #ticking = false
  #again = false
  readonly #inflight = new Set<Promise<void>>()

  constructor(
    readonly store: WebhookStore,
    readonly queue: NotificationQueue,
    readonly options: ResolvedWebhookOptions,
    readonly log: WebhookLog
  ) {
    this.#sender = new Sender(options.allowedHosts, options.timeoutMs)
  }

  start(): void {
    this.#running = true
    this.#timer = setInterval(() => this.kick(), this.options.pollMs).unref()
    this.kick()
  }

  /** Stop taking deliveries and wait for the attempts in flight. */
  async stop(): Promise<void> {
    this.#running = false
    clearInterval(this.#timer)
    while (this.#ticking || this.#inflight.size > 0) await Promise.race([...this.#inflight, new Promise((resolve) => setTimeout(resolve, 5))])
    await this.#sender.close()
  }

  /** Look for due deliveries now (one look at a time; a kick during one asks for another). */
  kick(): void {
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
        this.kick()
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
          this.kick()
        })
      this.#inflight.add(p)
    }
  }

  async #attempt(d: ClaimedDelivery): Promise<void> {
    const hook = await this.store.webhook(d.owner, d.webhookId)
    if (hook === undefined || hook.status !== 'active') {
      // Deleted or disabled: what it had pending was handed back then. Left over is only a message
      // queued meanwhile (it still holds its lease): that one goes back now.
      if (await this.store.finish(d)) await requeue(this.queue, [d])
      return
    }
    const started = Date.now()
    const at = new Date(started).toISOString()
    const result = await this.#sender.send(hook.url, hook.secret, d.id, d.body)
    const report = (outcome: DeliveryEvent['outcome']) => {
      if (!listening()) return
      reportDelivery({ webhookId: d.webhookId, messageId: d.id, attempt, url: hook.url, startedAt: started, durationMs: result.durationMs, responseStatus: result.responseStatus, error: result.error, outcome, body: d.body })
    }
    const attempt = d.attempts + 1
    const log: DeliveryAttempt = { messageId: d.id, attempt, at, status: 'delivered', durationMs: result.durationMs }
    if (result.responseStatus !== undefined) log.responseStatus = result.responseStatus
    if (result.error !== undefined) log.error = result.error
    const o = this.options
    if (result.ok) {
      report('delivered')
      await this.store.finish(d)
      await this.store.logAttempt(d.webhookId, log, o.keepAttempts)
      await this.store.settle(d.owner, d.webhookId, true, o.disableAfter, '')
      return
    }
    if (!result.gone && attempt < o.attempts) {
      report('retrying')
      const next = Date.now() + backoff(o, attempt)
      await this.store.retry({ ...d, attempts: attempt }, next)
      await this.store.logAttempt(d.webhookId, { ...log, status: 'retrying', nextRetryAt: new Date(next).toISOString() }, o.keepAttempts)
      return
    }
    report('returned')
    // Queued on /notifications first, then forgotten: a crash between repeats the message, never loses it.
    await requeue(this.queue, [d])
    await this.store.finish(d)
    await this.store.logAttempt(d.webhookId, { ...log, status: 'returned' }, o.keepAttempts)
    const reason = result.gone
      ? 'The receiver answered 410 Gone'
      : `${o.disableAfter} messages in a row failed every attempt; the last: ${result.error}`
    const after = await this.store.settle(d.owner, d.webhookId, false, result.gone ? 0 : o.disableAfter, reason)
    if (after?.status === 'disabled') await requeue(this.queue, await this.store.drain(d.webhookId))
  }
}
