import type { WebhookStore } from './types.js'

/** How webhooks behave; every field has a documented default (docs/webhooks.md). */
export interface WebhookOptions {
  /** Where webhooks and pending deliveries live (default: memory, or Redis beside a RedisStore). */
  store?: WebhookStore
  /** Hosts (`host` or `host:port`) exempt from the https and address rules, e.g. `127.0.0.1:8080`. */
  allowedHosts?: string[]
  /** Webhooks per logical connection (default 10). */
  maxWebhooks?: number
  /** Pending deliveries per webhook (default 1000); beyond, messages are queued on /notifications. */
  maxPending?: number
  /** Bytes of pending deliveries per webhook (default 1 MiB); beyond, as above. */
  maxPendingBytes?: number
  /** Attempts per message before it goes back to /notifications (default 6). */
  attempts?: number
  /** Delay before the first retry; doubled each time, with jitter (default 1000 ms). */
  backoffMs?: number
  /** Longest delay between attempts (default 60 s). */
  maxBackoffMs?: number
  /** Time an attempt may take, connection to last byte (default 10 s). */
  timeoutMs?: number
  /** Messages in a row that exhaust their attempts before the webhook is disabled (default 5). */
  disableAfter?: number
  /** How long a claimed delivery is held by its instance (default timeoutMs + 5 s). */
  leaseMs?: number
  /** How often each instance looks for due deliveries made elsewhere (default 1000 ms). */
  pollMs?: number
  /** Attempts in flight at once per instance (default 16). */
  concurrency?: number
  /** Attempts kept per webhook for GET /webhooks/{id}/deliveries (default 50). */
  keepAttempts?: number
}

export type ResolvedWebhookOptions = Required<Omit<WebhookOptions, 'store'>>

export function resolveOptions(o: WebhookOptions): ResolvedWebhookOptions {
  const timeoutMs = o.timeoutMs ?? 10_000
  return {
    allowedHosts: (o.allowedHosts ?? []).map((h) => h.toLowerCase()),
    maxWebhooks: o.maxWebhooks ?? 10,
    maxPending: o.maxPending ?? 1000,
    maxPendingBytes: o.maxPendingBytes ?? 1024 * 1024,
    attempts: o.attempts ?? 6,
    backoffMs: o.backoffMs ?? 1000,
    maxBackoffMs: o.maxBackoffMs ?? 60_000,
    timeoutMs,
    disableAfter: o.disableAfter ?? 5,
    leaseMs: o.leaseMs ?? timeoutMs + 5000,
    pollMs: o.pollMs ?? 1000,
    concurrency: o.concurrency ?? 16,
    keepAttempts: o.keepAttempts ?? 50
  }
}

/** The delay before attempt `n + 1` after `n` failed ones: exponential, capped, half of it random. */
export function backoff(o: ResolvedWebhookOptions, n: number, random = Math.random()): number {
  const full = Math.min(o.maxBackoffMs, o.backoffMs * 2 ** (n - 1))
  return Math.round(full / 2 + (random * full) / 2)
}
