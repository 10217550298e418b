/** Whether a webhook receives deliveries, and if not, why (`GET /webhooks/{id}` says so). */
export type WebhookStatus = 'active' | 'disabled'

/** A webhook as stored: it belongs to one logical connection (`owner`), like a task. */
export interface WebhookRecord {
  id: string
  owner: string
  url: string
  /** Notification methods delivered; absent: every notification of the connection. */
  events?: string[]
  /** ISO 8601. */
  createdAt: string
  /** `whsec_` + base64 of the signing key; shown to the client once, in the 201 answer. */
  secret: string
  status: WebhookStatus
  disabledReason?: string
  disabledAt?: string
  /** Messages in a row that ran out of attempts (reset by any acknowledged delivery). */
  consecutiveFailures: number
}

/** One message waiting for (or in) delivery to one webhook. */
export interface PendingDelivery {
  /** The `webhook-id` header: the same for every attempt of this message. */
  id: string
  webhookId: string
  owner: string
  /** The JSON-RPC notification, as sent. */
  body: string
  /** Attempts made so far. */
  attempts: number
  /** Unix ms. */
  createdAt: number
}

/** A delivery handed to one instance: `lease` proves the claim when it settles the delivery. */
export interface ClaimedDelivery extends PendingDelivery {
  lease: string
}

/** What one attempt did, for `GET /webhooks/{id}/deliveries`. */
export interface DeliveryAttempt {
  messageId: string
  attempt: number
  /** ISO 8601, when the attempt started. */
  at: string
  /** delivered (2xx), retrying (another attempt is due at nextRetryAt), returned (to /notifications). */
  status: 'delivered' | 'retrying' | 'returned'
  responseStatus?: number
  durationMs: number
  error?: string
  nextRetryAt?: string
}

/** Bounds of the pending deliveries of one webhook (beyond: the message is queued on /notifications). */
export interface PendingLimits {
  maxPending: number
  maxPendingBytes: number
}

/**
 * Where webhooks and their pending deliveries live: {@link MemoryWebhookStore} in one process,
 * {@link RedisWebhookStore} shared by every instance. A claimed delivery is leased: until the lease
 * ends no other claim hands it out, so exactly one instance attempts a message at a time, and a
 * message whose instance died is claimed again once its lease lapses. A store that cannot answer
 * rejects with `StoreUnavailable` (src/store/store-errors.ts): the routes answer 503 with
 * `Retry-After` then; anything else it throws is a 500.
 * @example
 * const due = await store.claim(Date.now(), 15_000, 16)
 * for (const d of due) if (await send(d)) await store.finish(d)
 */
export interface WebhookStore {
  /** Add a webhook; resolves false (and adds nothing) when its owner already has `max`. */
  addWebhook(hook: WebhookRecord, max: number): Promise<boolean>
  /** The owner's webhooks, oldest first. */
  webhooks(owner: string): Promise<WebhookRecord[]>
  /** Every owner with a webhook (active or not), each once: whom a broadcast (list_changed) is offered to. */
  owners(): Promise<string[]>
  /** One webhook, or undefined when unknown or another owner's. */
  webhook(owner: string, id: string): Promise<WebhookRecord | undefined>
  /** Delete a webhook with its pending deliveries and attempts; resolves the deliveries, or undefined when unknown. */
  removeWebhook(owner: string, id: string): Promise<PendingDelivery[] | undefined>
  /**
   * Count the outcome of a message: `ok` resets the failures; a failure adds one, and when they reach
   * `disableAfter` (0: at once) the webhook is disabled with `reason`. Resolves the webhook as it is now.
   */
  settle(owner: string, id: string, ok: boolean, disableAfter: number, reason: string): Promise<WebhookRecord | undefined>
  /** Queue a delivery, due now; false when the webhook's pending deliveries are at a limit. */
  enqueue(delivery: PendingDelivery, limits: PendingLimits): Promise<boolean>
  /** Lease up to `max` due deliveries (any webhook) for `leaseMs`. */
  claim(now: number, leaseMs: number, max: number): Promise<ClaimedDelivery[]>
  /** Give a claimed delivery back, due at `dueAt` with its new attempt count; false when the lease was lost. */
  retry(delivery: ClaimedDelivery, dueAt: number): Promise<boolean>
  /** Forget a claimed delivery (acknowledged, or returned to /notifications); false when the lease was lost. */
  finish(delivery: ClaimedDelivery): Promise<boolean>
  /** Take every pending delivery of a webhook (it was disabled): they go back to /notifications. */
  drain(webhookId: string): Promise<PendingDelivery[]>
  /** Record an attempt, keeping the newest `keep`. */
  logAttempt(webhookId: string, attempt: DeliveryAttempt, keep: number): Promise<void>
  /** The recorded attempts, newest first. */
  attempts(webhookId: string): Promise<DeliveryAttempt[]>
  close(): Promise<void>
}
