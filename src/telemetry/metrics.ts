import type { Counter, Meter, UpDownCounter } from '@opentelemetry/api'
import { Histogram } from './histogram.js'

/** Our own instruments' prefix (the conventions' `mcp.*` names are kept for theirs). */
export const PREFIX = 'mcp_pure_http'

/** The conventions' buckets of `mcp.server.operation.duration`, in seconds. */
export const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
const STORE_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5]

/** Every instrument, made once per server (see docs/observability.md for each). */
export interface Instruments {
  duration: Histogram
  /** Requests being served: a plain count, read by an observable when metrics are collected (no record per request). */
  active: { n: number }
  notificationsQueued: UpDownCounter
  requestsQueued: UpDownCounter
  tasks: Counter
  replayBytes: Counter
  refusals: Counter
  storeDuration: Histogram
  storeErrors: Counter
  webhookDeliveries: Counter
}

/** The histograms recorded per request and per store call: ours, read through a producer (src/telemetry/histogram.ts). */
export function histograms(): Pick<Instruments, 'duration' | 'storeDuration'> {
  return {
    duration: new Histogram(
      'mcp.server.operation.duration',
      'MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.',
      's',
      DURATION_BUCKETS
    ),
    storeDuration: new Histogram(`${PREFIX}.store.operation.duration`, 'Duration of store round trips, by mcp_pure_http.store.operation.', 's', STORE_BUCKETS)
  }
}

export function instruments(meter: Meter, own = histograms()): Instruments {
  const active = { n: 0 }
  meter.createObservableUpDownCounter(`${PREFIX}.requests.active`, {
    unit: '{request}',
    description: 'MCP requests being served by this instance.'
  }).addCallback((result) => result.observe(active.n))
  return {
    duration: own.duration,
    active,
    notificationsQueued: meter.createUpDownCounter(`${PREFIX}.notifications.queued`, {
      unit: '{notification}',
      description: 'Notifications queued for GET /notifications less those acknowledged; summed over instances, the queued total.'
    }),
    requestsQueued: meter.createUpDownCounter(`${PREFIX}.client_requests.queued`, {
      unit: '{request}',
      description: 'Server-to-client requests queued less those answered; summed over instances, the queued total.'
    }),
    tasks: meter.createCounter(`${PREFIX}.tasks.transitions`, {
      unit: '{task}',
      description: 'Tasks entering a status (working when created), by mcp_pure_http.task.status.'
    }),
    replayBytes: meter.createCounter(`${PREFIX}.replay.stored`, {
      unit: 'By',
      description: 'Bytes of tool results stored to replay retried calls (Mcp-Request-Id).'
    }),
    refusals: meter.createCounter(`${PREFIX}.refusals`, {
      unit: '{request}',
      description: 'MCP requests refused by rate limits (429) or load shedding and an unavailable store (503).'
    }),
    storeDuration: own.storeDuration,
    storeErrors: meter.createCounter(`${PREFIX}.store.errors`, {
      unit: '{error}',
      description: 'Store operations that failed, by mcp_pure_http.store.operation and error.type.'
    }),
    webhookDeliveries: meter.createCounter(`${PREFIX}.webhook.deliveries`, {
      unit: '{attempt}',
      description: 'Webhook delivery attempts, by mcp_pure_http.webhook.outcome: delivered, retrying (another attempt is due), returned (given up, back on /notifications).'
    })
  }
}
