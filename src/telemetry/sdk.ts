import { context, createNoopMeter, trace, type Meter, type Tracer } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http'
import { OTLPMetricExporter as OTLPProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto'
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { defaultResource, envDetector, detectResources, resourceFromAttributes, type Resource } from '@opentelemetry/resources'
import { AggregationTemporality, InstrumentType, MeterProvider, PeriodicExportingMetricReader, type MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base'
import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import type { Observer } from './index.js'
import { observeCore } from './core.js'
import { observeUpstreams, traceUpstream } from './gateway.js'
import { requestHooks, type Kit } from './hooks.js'
import { TaskLinks } from './links.js'
import { HistogramProducer } from './histogram.js'
import { histograms, instruments } from './metrics.js'
import { otlpProtocol, type SettledTelemetry } from './options.js'
import { observedStore } from './store.js'
import { observeWebhooks } from './webhooks.js'

const SCOPE = 'mcp-pure-http'
let contextManager = false

/**
 * The OpenTelemetry SDK of one server: a tracer provider exporting as `OTEL_TRACES_EXPORTER` says,
 * a meter provider read by `/metrics` (Prometheus) and/or pushed over OTLP. The providers are the
 * server's own (not registered globally), so that several servers in one process, and an
 * application's own SDK, do not collide; only the context manager is global, set once.
 */
export function createObserver(settled: SettledTelemetry): Observer {
  const env = settled.env
  if (!contextManager) {
    // false: the application registered its own, which carries context as well.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    contextManager = true
  }
  const resource = resourceOf(settled)
  const propagator = new W3CTraceContextPropagator()

  let tracerProvider: BasicTracerProvider | undefined
  let tracer: Tracer | undefined
  if (settled.traces) {
    tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(spanExporter(env))] })
    tracer = tracerProvider.getTracer(SCOPE)
    traceUpstream(tracer, propagator)
  }

  // The per-request histograms are ours (src/telemetry/histogram.ts), read by each reader beside the SDK's instruments.
  const own = histograms()
  const producer = (temporality = AggregationTemporality.CUMULATIVE) => new HistogramProducer([own.duration, own.storeDuration], resource, SCOPE, temporality)
  const readers: MetricReader[] = []
  let prometheus: PrometheusExporter | undefined
  if (settled.metrics !== false) {
    const port = settled.metrics === true ? undefined : settled.metrics
    // No host: the exporter's own default (all interfaces), as when the key is absent.
    const server = port === undefined ? { preventServerStart: true } : { port: port.port, host: port.host }
    prometheus = new PrometheusExporter({ ...server, metricProducers: [producer()] })
    readers.push(prometheus)
  }
  if (settled.otlpMetrics) {
    const url = endpoint(env, 'METRICS', 'v1/metrics')
    const config = url === undefined ? {} : { url }
    const exporter = otlpProtocol(env, 'METRICS') === 'http/json' ? new OTLPMetricExporter(config) : new OTLPProtoMetricExporter(config)
    readers.push(new PeriodicExportingMetricReader({ exporter, metricProducers: [producer(exporter.selectAggregationTemporality(InstrumentType.HISTOGRAM))] }))
  }
  const meterProvider = readers.length === 0 ? undefined : new MeterProvider({ resource, readers })
  const meter: Meter = meterProvider?.getMeter(SCOPE) ?? createNoopMeter()
  if (meterProvider !== undefined) observeUpstreams(meter)
  const kit: Kit = { tracer, propagator, m: instruments(meter, own), tasks: new TaskLinks() }
  const serializer = new PrometheusSerializer()
  const cores = new WeakSet<McpServer>()
  const stopWebhooks = observeWebhooks(tracer, kit.m, kit.tasks)

  return {
    instrument(fastify: FastifyInstance, mcp: McpServer) {
      mcp.store = observedStore(mcp.store, tracer, kit.m)
      // Its methods once: a gateway's reload serves the same server from each app it builds. Only
      // for traces: what the core tells is for the request's span (a tool's isError reaches the
      // metric from the answer itself, see hooks.ts), and a wrapper costs every call.
      if (tracer !== undefined && !cores.has(mcp)) observeCore(mcp, propagator, kit.tasks)
      cores.add(mcp)
      requestHooks(fastify, mcp, kit)
    },
    logFields(): Record<string, string> {
      const sc = trace.getSpan(context.active())?.spanContext()
      // A new object every line, never a shared one: pino merges the line's own fields into what the
      // mixin returns (Object.assign), so a shared `{}` collected every line's fields and handed them
      // to every later line (another request's reason, tool or principal).
      return sc === undefined ? {} : { trace_id: sc.traceId, span_id: sc.spanId, trace_flags: `0${sc.traceFlags.toString(16)}` }
    },
    serveMetrics(app: FastifyInstance) {
      if (settled.metrics !== true) return
      // Like /health: outside the MCP routes, no authentication, not in the OpenAPI document.
      app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
        const { resourceMetrics } = await prometheus!.collect()
        return reply.type('text/plain; version=0.0.4; charset=utf-8').send(serializer.serialize(resourceMetrics))
      })
    },
    async shutdown() {
      stopWebhooks()
      await Promise.all([tracerProvider?.shutdown(), meterProvider?.shutdown()])
    }
  }
}

function resourceOf(settled: SettledTelemetry): Resource {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read where the settings were read.
  const saved = process.env
  process.env = settled.env
  try {
    return defaultResource()
      .merge(resourceFromAttributes({ 'service.name': settled.serviceName }))
      .merge(detectResources({ detectors: [envDetector] }))
  } finally {
    process.env = saved
  }
}

/** `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT` as is, else `OTEL_EXPORTER_OTLP_ENDPOINT` + the signal's path. */
function endpoint(env: NodeJS.ProcessEnv, signal: string, path: string): string | undefined {
  const own = env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]?.trim()
  if (own) return own
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  return base ? `${base.replace(/\/+$/, '')}/${path}` : undefined
}

function spanExporter(env: NodeJS.ProcessEnv): SpanExporter {
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'console') return new ConsoleSpanExporter()
  const url = endpoint(env, 'TRACES', 'v1/traces')
  const config = url === undefined ? {} : { url }
  return otlpProtocol(env, 'TRACES') === 'http/json' ? new OTLPTraceExporter(config) : new OTLPProtoTraceExporter(config)
}
