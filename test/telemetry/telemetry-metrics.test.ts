import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import type { FastifyInstance } from 'fastify'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { DURATION_BUCKETS } from '../../src/telemetry/metrics.js'
import { build, call } from '../helpers/helper.js'
import { freePort } from '../helpers/redis-server.js'
import { rpc } from '../helpers/rpc.js'
import { Type } from '@sinclair/typebox'

interface Family { name: string; type: string; metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string }> }

/**
 * The families of an exposition, by name. The parser folds the series of a labelled histogram into
 * one unlabelled sample, so each histogram is read twice: as typed (its type), and with its type
 * line made `untyped`, which gives its `_count`, `_sum` and `_bucket` series with their labels.
 */
function families(text: string): Map<string, Family> {
  const typed = parsePrometheusTextFormat(text) as Family[]
  const series = parsePrometheusTextFormat(text.replace(/^(# TYPE \S+) histogram$/gm, '$1 untyped')) as Family[]
  // Series of one name come back as several families when other lines sit between them: merged.
  const out = new Map<string, Family>()
  for (const f of [...series, ...typed]) {
    const seen = out.get(f.name)
    if (seen === undefined || f.type !== seen.type) out.set(f.name, { ...f, metrics: [...f.metrics] })
    else seen.metrics.push(...f.metrics)
  }
  return out
}

async function scrape(app: FastifyInstance, url = '/metrics'): Promise<Map<string, Family>> {
  const res = await app.inject({ url })
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}`)
  t.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8')
  return families(res.payload)
}

/** The histogram's buckets of one series (labels without `le`), by upper bound. */
const buckets = (f: Map<string, Family>, name: string, labels: Record<string, string>): Map<string, number> =>
  new Map(f.get(`${name}_bucket`)!.metrics
    .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    .map((m) => [m.labels!.le!, Number(m.value)]))

const value = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number => {
  const f = families.get(name)
  const m = f?.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v))
  return m === undefined ? 0 : Number(m.value ?? m.count)
}

const LEGACY = { 'mcp-protocol-version': '2025-11-25' }

t.test('GET /metrics: the conventions histogram and our gauges move with traffic, read by a real Prometheus parser', async (t) => {
  const demo = createDemoServer()
  demo.tool({ name: 'boom', description: 'Always fails.', input: Type.Object({}) }, () => {
    throw new Error('it broke')
  })
  const { app, mcp } = await build(t, { mcp: demo, telemetry: { metrics: true }, rateLimit: { max: 10, timeWindowMs: 60_000 } })
  const echo = () => call(app, { method: 'POST', url: '/tools/echo/calls', payload: { arguments: { text: 'hi' } } })
  t.equal((await echo()).status, 200)
  const before = await scrape(app)
  t.equal(before.get('mcp_server_operation_duration')!.type, 'HISTOGRAM')
  const echoes = before.get('mcp_server_operation_duration_count')!.metrics.find((m) => m.labels?.gen_ai_tool_name === 'echo')!
  t.match(echoes.labels, { mcp_method_name: 'tools/call', gen_ai_operation_name: 'execute_tool', mcp_protocol_version: '2026-07-28', network_transport: 'tcp' })
  t.equal(echoes.value, '1')
  const bounds = buckets(before, 'mcp_server_operation_duration', { gen_ai_tool_name: 'echo' })
  t.same([...bounds.keys()].map((k) => (k === '+Inf' ? Infinity : Number(k))), [...DURATION_BUCKETS, Infinity], "the conventions' buckets")
  t.equal(bounds.get('+Inf'), 1)
  t.equal(value(before, 'mcp_pure_http_requests_active'), 0, 'nothing in flight between requests')

  await echo()
  await echo()
  const after = await scrape(app)
  t.equal(value(after, 'mcp_server_operation_duration_count', { gen_ai_tool_name: 'echo' }), 3, 'the histogram counts each call')
  t.equal(buckets(after, 'mcp_server_operation_duration', { gen_ai_tool_name: 'echo' }).get('+Inf'), 3)

  // A tool that fails, on both faces: the conventions' tool_error (metrics alone, without tracing).
  t.equal((await call(app, { method: 'POST', url: '/tools/boom/calls', payload: { arguments: {} } })).body.isError, true)
  t.equal((await rpc(app, 'tools/call', { name: 'boom', arguments: {} }, { id: 5 })).body.result.isError, true)
  const failed = await scrape(app)
  t.equal(value(failed, 'mcp_server_operation_duration_count', { gen_ai_tool_name: 'boom', error_type: 'tool_error' }), 2)

  // A notification queued for a subscribed connection, handed out, then acknowledged.
  t.equal((await call(app, { method: 'POST', url: '/resources/subscribe', payload: { uri: 'demo://readme' }, headers: LEGACY })).status, 202)
  await mcp.resourceUpdated('demo://readme')
  t.equal(value(await scrape(app), 'mcp_pure_http_notifications_queued'), 1, 'the queue gauge rose')
  const taken = await call(app, { url: '/notifications', headers: LEGACY })
  t.equal(taken.body.length, 1)
  const ack = await call(app, { method: 'POST', url: '/notifications', headers: { ...LEGACY, 'mcp-message-group': taken.headers['mcp-message-group'] as string } })
  t.equal(ack.status, 202)
  const drained = await scrape(app)
  t.equal(value(drained, 'mcp_pure_http_notifications_queued'), 0, 'and fell when acknowledged')
  t.equal(value(drained, 'mcp_pure_http_store_operation_duration_count', { mcp_pure_http_store_operation: 'pushNotification' }), 1, 'store latency by operation')

  // The rate limit: the eleventh request of the window is refused, and counted.
  let refused = 0
  for (let i = 0; i < 4; i++) if ((await echo()).status === 429) refused++
  t.ok(refused > 0)
  const limited = await scrape(app)
  t.equal(value(limited, 'mcp_pure_http_refusals_total', { http_response_status_code: '429' }), refused)
  t.ok(limited.get('mcp_server_operation_duration_count')!.metrics.some((m) => m.labels?.error_type !== undefined && m.labels.error_type === m.labels.rpc_response_status_code), 'refused requests measured with their error')
})

t.test('task and replay counters; /metrics stays out of the OpenAPI document and needs no auth', async (t) => {
  const { app } = await build(t, {
    mcp: createDemoServer({ taskStepMs: 1 }),
    telemetry: { metrics: true },
    authenticate: async (request) => {
      if (request.headers.authorization !== 'Bearer ok') throw Object.assign(new Error('no'), { statusCode: 401 })
      return { id: 'alice', scopes: [], anonymous: false }
    }
  })
  const auth = { authorization: 'Bearer ok' }
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
  const created = await call(app, { method: 'POST', url: '/tools/slow_compute/calls', payload: { arguments: { n: 1 }, _meta: meta }, headers: auth })
  t.equal(created.status, 202)
  for (let i = 0; i < 200; i++) {
    if ((await call(app, { url: `/tasks/${created.body.taskId}`, headers: { ...auth, 'mcp-meta': JSON.stringify(meta) } })).body.status === 'completed') break
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  await call(app, { method: 'POST', url: '/tools/echo/calls', payload: { arguments: { text: 'once' } }, headers: { ...auth, 'mcp-request-id': 'replay-me' } })
  t.equal((await call(app, { url: '/tools' })).status, 401, 'the MCP routes need a token')
  const metrics = await scrape(app)
  t.equal(value(metrics, 'mcp_pure_http_tasks_transitions_total', { mcp_pure_http_task_status: 'working' }), 1, 'a task created')
  t.equal(value(metrics, 'mcp_pure_http_tasks_transitions_total', { mcp_pure_http_task_status: 'completed' }), 1, 'and completed')
  t.ok(value(metrics, 'mcp_pure_http_replay_stored_total') > 20, 'bytes kept to replay a retried call')
  t.ok(value(metrics, 'mcp_server_operation_duration_count', { mcp_method_name: 'tasks/get' }) >= 1)
  const doc = (await call(app, { url: '/openapi.json', headers: auth })).body
  t.notOk(Object.keys(doc.paths).some((p) => p.includes('metrics')), 'not in the OpenAPI document')
})

t.test('metrics on a port of their own', async (t) => {
  const port = await freePort()
  const { app } = await build(t, { telemetry: { metrics: { port, host: '127.0.0.1' } } })
  t.equal((await app.inject({ url: '/metrics' })).statusCode, 404, 'not on the main server')
  await call(app, { url: '/tools' })
  let text = ''
  for (let i = 0; i < 50 && text === ''; i++) {
    try {
      text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  t.equal(value(families(text), 'mcp_server_operation_duration_count', { mcp_method_name: 'tools/list' }), 1)
})

t.test('telemetry off: no @opentelemetry module is loaded, no hook, no /metrics', async (t) => {
  // A child process whose module resolution refuses any @opentelemetry package: the server must
  // start and answer without one; the same child with telemetry on proves the refusal bites.
  const script = (telemetry: string) => `
    import { register } from 'node:module'
    register('data:text/javascript,' + encodeURIComponent(
      "export async function resolve(s, c, next) { if (s.startsWith('@opentelemetry/')) throw new Error('loaded ' + s); return next(s, c) }"))
    const { buildServer } = await import(${JSON.stringify(new URL('../../dist/src/server.js', import.meta.url).href)})
    const { createDemoServer } = await import(${JSON.stringify(new URL('../../dist/src/demo/catalogue.js', import.meta.url).href)})
    const app = await buildServer({ logger: false, mcp: createDemoServer(), telemetry: ${telemetry} })
    const call = await app.inject({ method: 'POST', url: '/tools/echo/calls', payload: { arguments: { text: 'hi' } } })
    const metrics = await app.inject({ url: '/metrics' })
    console.log(JSON.stringify({ call: call.statusCode, metrics: metrics.statusCode }))
    await app.close()`
  const run = (telemetry: string) =>
    spawnSync(process.execPath, ['--input-type=module', '-e', script(telemetry)], { encoding: 'utf8', env: { PATH: process.env.PATH } })
  const off = run('undefined')
  t.equal(off.status, 0, off.stderr)
  t.match(JSON.parse(off.stdout), { call: 200, metrics: 404 })
  const on = run('{ metrics: true }')
  t.not(on.status, 0)
  t.match(on.stderr, /loaded @opentelemetry\//, 'with telemetry on the packages are imported')
})

t.test('npm start with MCP_METRICS=true serves /metrics beside /health', async (t) => {
  const port = await freePort()
  const main = new URL('../../dist/src/main.js', import.meta.url).pathname
  const child = spawn(process.execPath, [main], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'silent', MCP_METRICS: 'true' },
    stdio: 'ignore'
  })
  t.teardown(async () => {
    if (child.exitCode === null) await (child.kill('SIGTERM'), once(child, 'exit'))
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; !(await fetch(`${base}/health`).then((r) => r.ok, () => false)); i++) {
    if (i === 400) throw new Error('the demo did not start')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.equal((await fetch(`${base}/tools`)).status, 200)
  const res = await fetch(`${base}/metrics`)
  t.equal(res.status, 200)
  t.equal(value(families(await res.text()), 'mcp_server_operation_duration_count', { mcp_method_name: 'tools/list' }), 1)
})
