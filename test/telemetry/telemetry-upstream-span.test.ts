import t from 'tap'
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { Upstream } from '../../src/gateway/upstream.js'
import { traceUpstream } from '../../src/telemetry/gateway.js'

// The upstream's own request, replaced before tracing wraps it (this file runs in its own process):
// what it was sent is kept, and it answers or fails as each method says.
const sent: { method: string; params: Record<string, unknown> }[] = []
Upstream.prototype.request = async function (method, params) {
  sent.push({ method, params })
  if (method === 'tools/call' && params.name === 'broken') return { content: [], isError: true }
  if (method === 'resources/read') throw Object.assign(new Error('no such resource'), { code: -32002 })
  if (method === 'completion/complete') throw new Error('socket hang up')
  return {}
}

const exporter = new InMemorySpanExporter()
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test')
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
t.teardown(() => context.disable())
traceUpstream(tracer, new W3CTraceContextPropagator())
traceUpstream(tracer, new W3CTraceContextPropagator()) // a second start wraps nothing twice

const upstream = Object.create(Upstream.prototype) as Upstream
const inRequest = <T>(fn: () => Promise<T>) => {
  const server = tracer.startSpan('tools/call gateway', { kind: SpanKind.SERVER })
  return context.with(trace.setSpan(context.active(), server), fn).finally(() => server.end())
}

t.test('each upstream call inside a traced request is a CLIENT span, its context sent on in _meta', async (t) => {
  await inRequest(() => upstream.request('tools/call', { name: 'broken', arguments: {} }))
  await inRequest(() => upstream.request('prompts/get', { name: 'review' }))
  await t.rejects(inRequest(() => upstream.request('resources/read', { uri: 'file:///x' })), { code: -32002 })
  await t.rejects(inRequest(() => upstream.request('completion/complete', { ref: {} })), /socket hang up/)
  await upstream.request('ping', {})
  const spans = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT)
  t.same(spans.map((s) => s.name), ['tools/call broken', 'prompts/get review', 'resources/read', 'completion/complete'], 'a call outside a traced request makes no span')
  const [tool, prompt, read, complete] = spans
  t.match(tool!.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'broken', 'gen_ai.operation.name': 'execute_tool', 'error.type': 'tool_error' })
  t.equal(tool!.status.code, SpanStatusCode.ERROR, 'a tool error is an error of the span')
  t.match(prompt!.attributes, { 'mcp.method.name': 'prompts/get', 'gen_ai.prompt.name': 'review' })
  t.equal(prompt!.status.code, SpanStatusCode.UNSET)
  t.match(read!.attributes, { 'mcp.resource.uri': 'file:///x', 'error.type': '-32002', 'rpc.response.status_code': '-32002' }, 'a JSON-RPC error keeps its code')
  t.match(complete!.attributes, { 'error.type': 'Error' })
  t.notOk('rpc.response.status_code' in complete!.attributes, 'no code, no status code')
  t.equal(complete!.status.message, 'socket hang up')
  // The upstream got the span's own context as traceparent, in _meta.
  const meta = sent[0]!.params._meta as Record<string, string>
  t.match(meta.traceparent, new RegExp(`^00-${tool!.spanContext().traceId}-${tool!.spanContext().spanId}-01$`))
  t.same(sent.at(-1), { method: 'ping', params: {} }, 'the untraced call is passed on as it was')
})
