import Fastify from 'fastify'
import { port } from '../catalogue.js'

/**
 * The floor of telemetry by the official SDK (issue #19): bare Fastify's `tools/call echo` (as in
 * bare.ts), and with `TELEMETRY=on` the least a server following the MCP conventions does with the
 * official Node SDK, the same packages and exporters this server uses: the AsyncLocalStorage
 * context manager (so that a handler's own spans are children), one SERVER span per request with
 * the conventions' required attributes, active while the handler runs, exported in batches over
 * OTLP/HTTP protobuf, and one `mcp.server.operation.duration` record read by a Prometheus reader.
 * What it costs against `TELEMETRY=off` is what any server pays for the same telemetry on this
 * Node; this server's own cost is what it adds beyond that (the telemetry phase prints both).
 */
const app = Fastify({ logger: false, forceCloseConnections: true })

if (process.env.TELEMETRY === 'on') {
  const { SpanKind, context, trace } = await import('@opentelemetry/api')
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks')
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base')
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto')
  const { MeterProvider } = await import('@opentelemetry/sdk-metrics')
  const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus')
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  const tracer = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] }).getTracer('bench')
  const duration = new MeterProvider({ readers: [new PrometheusExporter({ preventServerStart: true })] })
    .getMeter('bench')
    .createHistogram('mcp.server.operation.duration', { unit: 's', advice: { explicitBucketBoundaries: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300] } })
  const started = new WeakMap<object, { t: number; span: ReturnType<typeof tracer.startSpan> }>()
  // ATTRIBUTES=conventions: the span carries what this server's does for the same call (the
  // conventions' recommended attributes too, read from the request as it reads them), so that
  // the two spans cost the same to make and to encode.
  const recommended = process.env.ATTRIBUTES === 'conventions'
  app.addHook('onRequest', (request, _reply, done) => {
    const attributes: Record<string, string | number> = { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo', 'network.transport': 'tcp' }
    if (recommended) {
      Object.assign(attributes, {
        'network.protocol.name': 'http',
        'network.protocol.version': request.raw.httpVersion,
        'client.address': request.ip,
        'gen_ai.operation.name': 'execute_tool'
      })
      if (request.socket.remotePort !== undefined) attributes['client.port'] = request.socket.remotePort
    }
    const span = tracer.startSpan('tools/call echo', { kind: SpanKind.SERVER, attributes })
    started.set(request, { t: performance.now(), span })
    context.with(trace.setSpan(context.active(), span), done)
  })
  app.addHook('onResponse', (request, reply, done) => {
    const s = started.get(request)!
    duration.record((performance.now() - s.t) / 1000, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo', 'network.transport': 'tcp' })
    s.span.setAttribute('http.response.status_code', reply.statusCode)
    if (recommended) s.span.setAttribute('mcp.protocol.version', '2026-07-28')
    s.span.end()
    done()
  })
}

app.post<{ Params: { name: string }; Body: { arguments: Record<string, string> } }>(
  '/tools/:name/calls',
  { schema: { body: { type: 'object', required: ['arguments'], properties: { arguments: { type: 'object', properties: { text: { type: 'string', maxLength: 100_000 } } } } } } },
  async (request) => ({ content: [{ type: 'text', text: String(request.body.arguments.text) }], resultType: 'complete' })
)
app.get('/ping', () => ({}))

await app.listen({ host: '127.0.0.1', port: port() })
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
