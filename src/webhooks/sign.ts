import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

const PREFIX = 'whsec_'

/** A new signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks wants at least 24). */
export function newSecret(): string {
  return PREFIX + randomBytes(32).toString('base64')
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64')
}

/**
 * The `webhook-signature` value of a message (Standard Webhooks): `v1,` + base64 HMAC-SHA256 of
 * `id.timestamp.body` keyed with the secret's decoded bytes.
 */
export function signature(secret: string, id: string, timestampSec: number, body: string): string {
  return 'v1,' + createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSec}.${body}`).digest('base64')
}

/** The headers of one delivery attempt. */
export function signedHeaders(secret: string, id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000)
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature(secret, id, timestamp, body)
  }
}

/** Headers as Node (`IncomingHttpHeaders`), fetch (`Headers`) or a plain object give them. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>

function header(headers: HeaderSource, name: string): string | undefined {
  const v = headers instanceof Headers ? headers.get(name) : headers[name]
  return Array.isArray(v) ? v[0] : v ?? undefined
}

/**
 * Check a delivery the way Standard Webhooks receivers do: the signature (any `v1,` entry of the
 * space-separated list) over the raw body, and a timestamp within `toleranceSec` of now (replays
 * of old messages fail). Resolves the parsed JSON-RPC notification; throws when anything is off.
 * De-duplicate on `webhook-id`: a message may arrive more than once.
 * @example
 * const note = verifyWebhook(process.env.WEBHOOK_SECRET!, req.headers, rawBody)
 */
export function verifyWebhook(secret: string, headers: HeaderSource, body: string, toleranceSec = 300): { method: string; params?: Record<string, unknown> } {
  const id = header(headers, 'webhook-id')
  const ts = header(headers, 'webhook-timestamp')
  const sigs = header(headers, 'webhook-signature')
  if (id === undefined || ts === undefined || sigs === undefined) throw new Error('Missing webhook-id, webhook-timestamp or webhook-signature')
  const timestamp = Number(ts)
  if (!/^\d{1,12}$/.test(ts) || Math.abs(Date.now() / 1000 - timestamp) > toleranceSec) throw new Error('webhook-timestamp is missing, malformed or too far from now')
  const expected = Buffer.from(signature(secret, id, timestamp, body))
  const match = sigs.split(' ').some((s) => {
    const got = Buffer.from(s)
    return got.length === expected.length && timingSafeEqual(got, expected)
  })
  if (!match) throw new Error('No matching webhook-signature')
  return JSON.parse(body) as { method: string; params?: Record<string, unknown> }
}
