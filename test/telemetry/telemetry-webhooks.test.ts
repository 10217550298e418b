import t from 'tap'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'
import { otlpReceiver } from '../helpers/otlp-receiver.js'
import { startReceiver } from '../helpers/webhook-receiver.js'

const CLIENT = 3
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }

t.test('webhook deliveries: a CLIENT span per attempt, linked to the task call, and a counter by outcome', async (t) => {
  const otlp = await otlpReceiver()
  t.teardown(() => otlp.close())
  // The first delivery fails (500), every later one is taken.
  const rx = await startReceiver((n) => (n === 0 ? 500 : 200))
  t.teardown(() => rx.close())
  const app = await buildServer({
    logger: false,
    mcp: createDemoServer({ taskStepMs: 5 }),
    authenticate: async () => ({ id: 'alice', scopes: [], anonymous: false }),
    webhooks: { allowedHosts: [`127.0.0.1:${rx.port}`], backoffMs: 5, maxBackoffMs: 20, pollMs: 20 },
    telemetry: { traces: true, metrics: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } }
  })
  const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: payload as object })
  t.equal((await post('/webhooks', { url: rx.url, events: ['notifications/tasks'] })).statusCode, 201)
  const created = (await post('/tools/slow_compute/calls', { arguments: { n: 2 }, task: { notify: true }, _meta: TASKS })).json()
  t.equal(created.resultType, 'task')
  // working (refused once, then retried), then completed: three POSTs at least.
  await rx.waitFor(3)
  // The refused message again (the same webhook-id), after its backoff.
  const again = () => rx.got.filter((d) => d.headers['webhook-id'] === rx.got[0]!.headers['webhook-id']).length === 2
  for (let i = 0; i < 500 && !again(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.ok(again(), 'retried')
  const count = async (outcome: string) => {
    const metrics = parsePrometheusTextFormat((await app.inject({ url: '/metrics' })).payload)
    const deliveries = (metrics as Array<{ name: string; metrics: Array<{ value: string; labels?: Record<string, string> }> }>).find((m) => m.name === 'mcp_pure_http_webhook_deliveries_total')
    return Number(deliveries?.metrics.find((s) => s.labels?.mcp_pure_http_webhook_outcome === outcome)?.value ?? 0)
  }
  // An attempt is counted just after its answer arrives.
  for (let i = 0; i < 500 && (await count('delivered')) < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(await count('retrying'), 1, 'the refused attempt')
  t.ok((await count('delivered')) >= 2, 'the retry and the next message')
  await app.close()

  const posts = otlp.spans.filter((s) => s.kind === CLIENT && s.name === 'POST')
  t.ok(posts.length >= 3, `one span per attempt (${posts.length})`)
  const failed = posts.find((s) => s.attributes['mcp_pure_http.webhook.outcome'] === 'retrying')!
  t.match(failed, {
    status: { code: 2, message: 'The receiver answered 500' },
    attributes: { 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'server.port': rx.port, 'http.response.status_code': 500, 'error.type': '500', 'mcp_pure_http.webhook.attempt': 1 }
  })
  const retried = posts.find((s) => s.attributes['mcp_pure_http.webhook.message_id'] === failed.attributes['mcp_pure_http.webhook.message_id'] && s !== failed)!
  t.match(retried.attributes, { 'mcp_pure_http.webhook.attempt': 2, 'mcp_pure_http.webhook.outcome': 'delivered', 'http.response.status_code': 200 })
  t.notOk('error.type' in retried.attributes)
  t.notOk(JSON.stringify(posts).includes('/hook'), 'the URL path is not recorded')
  const call = otlp.spans.find((s) => s.name === 'tools/call slow_compute')!
  t.ok(posts.every((s) => s.links.some((l) => l.spanId === call.spanId && l.attributes['mcp_pure_http.link'] === 'task')), 'each linked to the call that started the task')
})

t.test('a delivery nobody answers in time is error.type timeout; given up, returned', async (t) => {
  const otlp = await otlpReceiver()
  t.teardown(() => otlp.close())
  const rx = await startReceiver(() => 'hang')
  t.teardown(() => rx.close())
  const mcp = createDemoServer()
  const app = await buildServer({
    logger: false,
    mcp,
    authenticate: async () => ({ id: 'bob', scopes: [], anonymous: false }),
    webhooks: { allowedHosts: [`127.0.0.1:${rx.port}`], attempts: 1, timeoutMs: 100, pollMs: 20 },
    telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } }
  })
  const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' }, payload: payload as object })
  const hook = (await post('/webhooks', { url: rx.url })).json()
  t.equal((await post('/resources/subscribe', { uri: 'demo://readme' })).statusCode, 202)
  await mcp.resourceUpdated('demo://readme')
  let log: { status: string }[] = []
  for (let i = 0; i < 500 && log.length === 0; i++) {
    log = (await app.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries
    if (log.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.equal(log[0]?.status, 'returned')
  await app.close()
  const span = otlp.spans.find((s) => s.kind === CLIENT && s.name === 'POST')!
  t.match(span.attributes, { 'error.type': 'timeout', 'mcp_pure_http.webhook.outcome': 'returned' })
  t.notOk('http.response.status_code' in span.attributes)
  t.same(span.links, [], 'not about a task: no link')
})
