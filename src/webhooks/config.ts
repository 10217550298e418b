import { Type, type Static } from '@sinclair/typebox'
import type { WebhookOptions } from './options.js'

const Int = (min: number, max: number, def: number, description: string) => Type.Integer({ minimum: min, maximum: max, default: def, description })

/** The `MCP_WEBHOOK*` variables, part of the server's ConfigSchema (src/config.ts). */
export const WebhookConfig = {
  MCP_WEBHOOKS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on', description: 'Serve /webhooks (on) or not (off).' }),
  MCP_WEBHOOK_ALLOWED_HOSTS: Type.Optional(
    Type.String({ minLength: 1, description: 'Webhook hosts exempt from the https and address rules, comma-separated host or host:port (e.g. 127.0.0.1:8080).' })
  ),
  MCP_WEBHOOK_MAX_PER_CONNECTION: Int(1, 1000, 10, 'Webhooks per logical connection.'),
  MCP_WEBHOOK_MAX_PENDING: Int(1, 1_000_000, 1000, 'Pending deliveries per webhook; beyond, notifications are queued on /notifications.'),
  MCP_WEBHOOK_MAX_PENDING_BYTES: Int(1024, 1024 * 1024 * 1024, 1024 * 1024, 'Bytes of pending deliveries per webhook; beyond, as above.'),
  MCP_WEBHOOK_ATTEMPTS: Int(1, 100, 6, 'Attempts per message before it goes back to /notifications.'),
  MCP_WEBHOOK_BACKOFF_MS: Int(1, 3_600_000, 1000, 'Delay before the first retry, doubled at each retry, half of it random.'),
  MCP_WEBHOOK_MAX_BACKOFF_MS: Int(1, 86_400_000, 60_000, 'Longest delay between two attempts.'),
  MCP_WEBHOOK_TIMEOUT_MS: Int(100, 600_000, 10_000, 'Time one attempt may take.'),
  MCP_WEBHOOK_DISABLE_AFTER: Int(1, 1000, 5, 'Messages in a row that fail every attempt before the webhook is disabled.'),
  MCP_WEBHOOK_LEASE_MS: Type.Optional(
    Type.Integer({ minimum: 100, maximum: 3_600_000, description: 'How long an instance holds a delivery it attempts (default: timeout + 5 s).' })
  ),
  MCP_WEBHOOK_POLL_MS: Int(10, 60_000, 1000, 'How often an instance looks for deliveries due (those another instance queued or gave up).')
}

type Values = Static<ReturnType<typeof Type.Object<typeof WebhookConfig>>>

/** The plugin's `webhooks` option from the configuration; false when `MCP_WEBHOOKS=off`. */
export function webhooksFromConfig(c: Values): WebhookOptions | false {
  if (c.MCP_WEBHOOKS === 'off') return false
  const out: WebhookOptions = {
    allowedHosts: (c.MCP_WEBHOOK_ALLOWED_HOSTS ?? '').split(/[\s,]+/).filter((h) => h !== ''),
    maxWebhooks: c.MCP_WEBHOOK_MAX_PER_CONNECTION,
    maxPending: c.MCP_WEBHOOK_MAX_PENDING,
    maxPendingBytes: c.MCP_WEBHOOK_MAX_PENDING_BYTES,
    attempts: c.MCP_WEBHOOK_ATTEMPTS,
    backoffMs: c.MCP_WEBHOOK_BACKOFF_MS,
    maxBackoffMs: c.MCP_WEBHOOK_MAX_BACKOFF_MS,
    timeoutMs: c.MCP_WEBHOOK_TIMEOUT_MS,
    disableAfter: c.MCP_WEBHOOK_DISABLE_AFTER,
    pollMs: c.MCP_WEBHOOK_POLL_MS
  }
  if (c.MCP_WEBHOOK_LEASE_MS !== undefined) out.leaseMs = c.MCP_WEBHOOK_LEASE_MS
  return out
}
