import { SpanKind, SpanStatusCode, type Attributes, type Link, type Tracer } from '@opentelemetry/api'
import { observeDeliveries, type DeliveryEvent } from '../webhooks/observe.js'
import type { TaskLinks } from './links.js'
import { PREFIX, type Instruments } from './metrics.js'

/**
 * Each webhook delivery attempt as a CLIENT span (the HTTP client conventions: `POST`, the server's
 * address, the response status, `error.type` when it failed), dated from the attempt itself and
 * linked to the call of the task it reports on; and `mcp_pure_http.webhook.deliveries` by outcome.
 * The URL's path and query are not recorded (a receiver may put a token there).
 */
export function observeWebhooks(tracer: Tracer | undefined, m: Instruments, tasks: TaskLinks): () => void {
  return observeDeliveries((e) => {
    m.webhookDeliveries.add(1, { [`${PREFIX}.webhook.outcome`]: e.outcome })
    if (tracer === undefined) return
    const url = new URL(e.url)
    const attributes: Attributes = {
      'http.request.method': 'POST',
      'server.address': url.hostname,
      'server.port': url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port),
      [`${PREFIX}.webhook.id`]: e.webhookId,
      [`${PREFIX}.webhook.message_id`]: e.messageId,
      [`${PREFIX}.webhook.attempt`]: e.attempt,
      [`${PREFIX}.webhook.outcome`]: e.outcome
    }
    if (e.responseStatus !== undefined) attributes['http.response.status_code'] = e.responseStatus
    const failed = e.outcome !== 'delivered'
    if (failed) attributes['error.type'] = e.responseStatus !== undefined ? String(e.responseStatus) : errorTypeOf(e.error)
    const task = taskOf(e, tasks)
    const links: Link[] = task === undefined ? [] : [{ context: task, attributes: { [`${PREFIX}.link`]: 'task' } }]
    const span = tracer.startSpan('POST', { kind: SpanKind.CLIENT, startTime: e.startedAt, attributes, links })
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR, ...(e.error === undefined ? {} : { message: e.error }) })
    span.end(e.startedAt + e.durationMs)
  })
}

/** The call that started the task a `notifications/tasks` message reports on, when this instance saw it. */
function taskOf(e: DeliveryEvent, tasks: TaskLinks) {
  if (!e.body.includes('"notifications/tasks"')) return undefined
  // The body is the JSON-RPC text this server wrote.
  const taskId = (JSON.parse(e.body) as { params?: { taskId?: unknown } }).params?.taskId
  return typeof taskId === 'string' ? tasks.get(taskId) : undefined
}

/** A failure without a response: `timeout` when the attempt ran out of time, else `_OTHER` (the conventions' fallback). */
function errorTypeOf(error: string | undefined): string {
  return error !== undefined && /in time|timed? ?out/i.test(error) ? 'timeout' : '_OTHER'
}
