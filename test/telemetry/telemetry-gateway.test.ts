import t from 'tap'
import parse from 'parse-prometheus-text-format'
import { Gateway } from '../../src/gateway/gateway.js'
import { MemoryRelay } from '../../src/gateway/relay.js'
import { StdioChild } from '../../src/gateway/stdio.js'
import { buildServer } from '../../src/server.js'
import { MemoryStore } from '../../src/store/memory.js'
import { everythingStdio } from '../helpers/gateway-helper.js'
import { otlpReceiver } from '../helpers/otlp-receiver.js'

const quiet = { debug() {}, info() {}, warn() {}, error() {} }

t.test("the gateway's upstream call: a CLIENT span under the request's, its context sent on in _meta", async (t) => {
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const gw = await Gateway.start({ name: 'upstream', spec: everythingStdio, log: quiet, server: {}, relay: new MemoryRelay(), instance: 'otel-test' })
  t.teardown(() => gw.close())
  const app = await buildServer({
    logger: false,
    mcp: gw.mcp,
    store: gw.wrapStore(new MemoryStore()),
    telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } }
  })
  // What the upstream is sent, seen where it is written to the child.
  const sent: Array<Record<string, unknown>> = []
  const send = StdioChild.prototype.send
  StdioChild.prototype.send = function (this: StdioChild, message) {
    if ('params' in message && message.params !== undefined) sent.push(message.params)
    return send.call(this, message)
  }
  t.teardown(() => void (StdioChild.prototype.send = send))
  const res = await app.inject({ method: 'POST', url: '/tools/echo/calls', payload: { arguments: { message: 'hi' } } })
  t.equal(res.statusCode, 200, res.payload)
  await app.close()
  const server = receiver.spans.find((s) => s.kind === 2 && s.name === 'tools/call echo')!
  const upstream = receiver.spans.find((s) => s.kind === 3 && s.name === 'tools/call echo')!
  t.ok(server && upstream, 'a SERVER and a CLIENT span')
  t.equal(upstream.parentSpanId, server.spanId, 'the upstream call is a child of the request')
  t.match(upstream.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo' })
  const meta = sent.find((p) => p.name === 'echo')?._meta as Record<string, unknown>
  t.equal(meta.traceparent, `00-${upstream.traceId}-${upstream.spanId}-01`, 'the upstream continues the trace from the CLIENT span')
})

t.test('mcp_pure_http.gateway.upstreams: the state of each upstream, down when its child dies, up after the restart', async (t) => {
  const { oddUpstream } = await import('../helpers/gateway-odd.js')
  const gw = await Gateway.start({ name: 'odd', spec: oddUpstream, log: quiet, server: {}, relay: new MemoryRelay(), instance: 'otel-gauge', restartMinMs: 300 })
  t.teardown(() => gw.close())
  const app = await buildServer({ logger: false, mcp: gw.mcp, store: gw.wrapStore(new MemoryStore()), telemetry: { metrics: true } })
  t.teardown(() => app.close())
  const states = async () => {
    type Family = { name: string; metrics: Array<{ value: string; labels?: Record<string, string> }> }
    const family = (parse((await app.inject({ url: '/metrics' })).payload) as Family[]).find((m) => m.name === 'mcp_pure_http_gateway_upstreams')!
    const mine = family.metrics.filter((s) => s.labels?.mcp_pure_http_upstream_name === 'odd')
    return Object.fromEntries(mine.map((s) => [s.labels!.mcp_pure_http_upstream_state, Number(s.value)]))
  }
  t.same(await states(), { starting: 0, up: 1, down: 0, failed: 0, closed: 0 })
  await app.inject({ method: 'POST', url: '/tools/exit/calls', payload: { arguments: {} } })
  let seen: Record<string, number> = {}
  for (let i = 0; i < 1000 && seen.down !== 1; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2))
    seen = await states()
  }
  t.same(seen, { starting: 0, up: 0, down: 1, failed: 0, closed: 0 }, 'down once the child exited')
  for (let i = 0; i < 1000 && seen.up !== 1; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5))
    seen = await states()
  }
  t.same(seen, { starting: 0, up: 1, down: 0, failed: 0, closed: 0 }, 'up again after the restart')
  await gw.close()
  t.same(await states(), { starting: 0, up: 0, down: 0, failed: 0, closed: 1 }, 'closed: reported once...')
  const { upstreams } = await import('../../src/gateway/upstream.js')
  t.notOk(upstreams.has(gw.upstream), '...then forgotten')
})

t.test("the gateway's upstream call that fails: error.type and status from the upstream's error", async (t) => {
  const { oddUpstream } = await import('../helpers/gateway-odd.js')
  const receiver = await otlpReceiver()
  t.teardown(() => receiver.close())
  const gw = await Gateway.start({ name: 'odd', spec: oddUpstream, log: quiet, server: {}, relay: new MemoryRelay(), instance: 'otel-fail', restartMinMs: 60_000 })
  t.teardown(() => gw.close())
  const app = await buildServer({ logger: false, mcp: gw.mcp, store: gw.wrapStore(new MemoryStore()), telemetry: { traces: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } } })
  // The child is killed during the call: the upstream request fails, 502 -32603.
  const pending = app.inject({ method: 'POST', url: '/tools/wait/calls', payload: { arguments: {} } })
  for (let i = 0; i < 500 && gw.rounds.callers().length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  process.kill(gw.upstream.pid!, 'SIGKILL')
  const res = await pending
  t.equal(res.statusCode, 502)
  await app.close()
  const upstream = receiver.spans.find((s) => s.kind === 3 && s.name === 'tools/call wait')!
  t.match(upstream, { status: { code: 2, message: /upstream/ }, attributes: { 'error.type': '-32603', 'rpc.response.status_code': '-32603' } })
})
