import { randomBytes } from 'node:crypto'
import { errors } from '../errors.js'
import type { ServerMessage } from '../store/types.js'
import { resolveOptions, type ResolvedWebhookOptions, type WebhookOptions } from './options.js'
import { newSecret } from './sign.js'
import { checkName, checkUrl, type RefusedTarget } from './ssrf.js'
import type { DeliveryAttempt, WebhookRecord, WebhookStore } from './types.js'
import { DeliveryWorker, requeue, type NotificationQueue, type WebhookLog } from './worker.js'

export type { NotificationQueue, WebhookLog }

/** A webhook as its owner sees it: everything but the secret and the owner. */
export type WebhookView = Omit<WebhookRecord, 'secret' | 'owner'>

const view = ({ secret: _s, owner: _o, ...rest }: WebhookRecord): WebhookView => rest
const newId = (prefix: string) => prefix + randomBytes(16).toString('base64url')

/**
 * Webhooks of logical connections: registration, and delivery of their notifications with retries.
 * `offer` is the one interception point: a notification an active webhook wants is delivered instead
 * of queued; one that runs out of attempts is queued after all (`queue.pushNotification`).
 * @example
 * const service = new WebhookService(new MemoryWebhookStore(), store.mailbox, { allowedHosts: ['127.0.0.1:8080'] }, log)
 * service.start()
 * const { secret } = await service.register('alice', { url: 'http://127.0.0.1:8080/hook' })
 */
export class WebhookService {
  readonly options: ResolvedWebhookOptions
  readonly #worker: DeliveryWorker

  constructor(
    readonly store: WebhookStore,
    readonly queue: NotificationQueue,
    options: WebhookOptions,
    readonly log: WebhookLog
  ) {
    this.options = resolveOptions(options)
    this.#worker = new DeliveryWorker(store, queue, this.options, log)
  }

  /** Register a webhook for `owner`: 400 -32602 naming the rule a URL breaks, or the limit reached. */
  async register(owner: string, input: { url: string; events?: string[] | undefined }): Promise<WebhookView & { secret: string }> {
    try {
      const { name } = checkUrl(input.url, this.options.allowedHosts)
      if (name !== undefined) await checkName(name)
    } catch (err) {
      // Both checks throw only RefusedTarget, whose message names the rule.
      throw errors.invalidParams((err as RefusedTarget).message)
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
    await requeue(this.queue, pending)
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
    this.#worker.kick()
    return all
  }

  /**
   * Take a notification meant for every connection (list_changed): offered to each owner with a
   * webhook. Resolves the owners for whom it was taken; the caller queues it for every other one.
   */
  async offerAll(notification: ServerMessage): Promise<Set<string>> {
    const owners = await this.store.owners()
    const taken = await Promise.all(owners.map(async (owner) => ((await this.offer(owner, notification)) ? [owner] : [])))
    return new Set(taken.flat())
  }

  /** Start delivering: due deliveries are looked for every `pollMs`, and at once after an offer. */
  start(): void {
    this.#worker.start()
  }

  /** Stop taking deliveries and wait for the attempts in flight. */
  async stop(): Promise<void> {
    await this.#worker.stop()
  }

  async #find(owner: string, id: string): Promise<WebhookRecord> {
    const hook = await this.store.webhook(owner, id)
    if (hook === undefined) throw notFound(id)
    return hook
  }
}

function notFound(id: string) {
  return errors.unknownWebhook(id)
}
