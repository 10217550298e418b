import t from 'tap'
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AggregationTemporality, InMemoryMetricExporter, InstrumentType, MeterProvider, PeriodicExportingMetricReader,
  type HistogramMetricData, type ResourceMetrics
} from '@opentelemetry/sdk-metrics'
import { Histogram, HistogramProducer, SERIES_LIMIT } from '../../src/telemetry/histogram.js'

const resource = resourceFromAttributes({ 'service.name': 'histogram-test' })
const only = (rm: ResourceMetrics, name: string) =>
  rm.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name) as HistogramMetricData | undefined

t.test('a value goes in the first bucket whose inclusive upper bound holds it; past the last, the overflow bucket', async (t) => {
  const h = new Histogram('d', 'a duration', 's', [0.1, 1, 10])
  const s = h.add('k', { a: 'x' })
  for (const v of [0, 0.1, 0.10001, 1, 5, 10, 11, 1e9]) s.record(v)
  t.same(s.counts, [2, 2, 2, 2])
  t.equal(s.count, 8)
  t.equal(s.sum, 0 + 0.1 + 0.10001 + 1 + 5 + 10 + 11 + 1e9)
  t.equal(s.min, 0)
  t.equal(s.max, 1e9)
  t.equal(h.get('k'), s, 'the key finds its series')
  t.equal(h.add('k', { a: 'other' }), s, 'adding a known key gives its series, attributes as first made')
  t.same(s.attributes, { a: 'x' })
  t.equal(h.get('other'), undefined)
})

t.test('past the series limit, new keys are counted together in one overflow series, as the SDK counts them', async (t) => {
  const h = new Histogram('d', 'a duration', 's', [1])
  for (let i = 0; i < SERIES_LIMIT; i++) h.add(`k${i}`, { i }).record(0.5)
  const over = h.add('one more', { i: 'one more' })
  const again = h.add('and another', { i: 'and another' })
  t.equal(over, again, 'one overflow series')
  t.same(over.attributes, { 'otel.metric.overflow': true })
  t.equal(h.get('one more'), undefined, 'a key past the limit is not kept')
  over.record(2)
  again.record(2)
  const all = h.all()
  t.equal(all.length, SERIES_LIMIT + 1)
  t.equal(all.at(-1), over, 'the overflow last')
  t.same(over.counts, [0, 2])
})

t.test('cumulative: every series with its lifetime count, sum, min and max; nothing recorded, no scope', async (t) => {
  const h = new Histogram('mcp.server.operation.duration', 'how long', 's', [0.01, 0.1])
  const producer = new HistogramProducer([h], resource, 'scope-name', AggregationTemporality.CUMULATIVE)
  t.same((await producer.collect()).resourceMetrics.scopeMetrics, [], 'no series, no scope')
  const s = h.add('echo', { 'gen_ai.tool.name': 'echo' })
  s.record(0.005)
  s.record(0.05)
  const first = await producer.collect()
  t.same(first.errors, [])
  t.equal(first.resourceMetrics.resource, resource)
  t.equal(first.resourceMetrics.scopeMetrics[0]!.scope.name, 'scope-name')
  const metric = only(first.resourceMetrics, 'mcp.server.operation.duration')!
  t.match(metric, { descriptor: { name: 'mcp.server.operation.duration', description: 'how long', unit: 's' }, aggregationTemporality: AggregationTemporality.CUMULATIVE })
  t.same(metric.dataPoints[0]!.value, { buckets: { boundaries: [0.01, 0.1], counts: [1, 1, 0] }, count: 2, sum: 0.055, min: 0.005, max: 0.05 })
  t.same(metric.dataPoints[0]!.attributes, { 'gen_ai.tool.name': 'echo' })
  s.record(1)
  const second = only((await producer.collect()).resourceMetrics, 'mcp.server.operation.duration')!
  t.same(second.dataPoints[0]!.value, { buckets: { boundaries: [0.01, 0.1], counts: [1, 1, 1] }, count: 3, sum: 1.055, min: 0.005, max: 1 }, 'cumulative: all of it again')
  t.same(second.dataPoints[0]!.startTime, metric.dataPoints[0]!.startTime, 'from the same start')
  t.same(metric.dataPoints[0]!.value.buckets.counts, [1, 1, 0], 'an earlier answer keeps its counts (a copy)')
})

t.test('delta: what came since this reader\'s previous collection, series without news left out, no min or max', async (t) => {
  const h = new Histogram('d', 'how long', 's', [1])
  const producer = new HistogramProducer([h], resource, 'scope-name', AggregationTemporality.DELTA)
  const quiet = h.add('quiet', { q: 1 })
  const busy = h.add('busy', { b: 1 })
  quiet.record(0.5)
  busy.record(0.5)
  busy.record(2)
  const first = only((await producer.collect()).resourceMetrics, 'd')!
  t.equal(first.aggregationTemporality, AggregationTemporality.DELTA)
  t.same(first.dataPoints.map((p) => [p.attributes, p.value]), [
    [{ q: 1 }, { buckets: { boundaries: [1], counts: [1, 0] }, count: 1, sum: 0.5 }],
    [{ b: 1 }, { buckets: { boundaries: [1], counts: [1, 1] }, count: 2, sum: 2.5 }]
  ])
  t.same(first.dataPoints[0]!.startTime, quiet.startTime, 'a series first seen: from its start')
  busy.record(3)
  const second = only((await producer.collect()).resourceMetrics, 'd')!
  t.same(second.dataPoints.map((p) => [p.attributes, p.value]), [[{ b: 1 }, { buckets: { boundaries: [1], counts: [0, 1] }, count: 1, sum: 3 }]])
  t.same(second.dataPoints[0]!.startTime, first.dataPoints[0]!.endTime, 'from the previous collection')
  t.same((await producer.collect()).resourceMetrics.scopeMetrics, [], 'nothing new: nothing sent')
})

t.test("through the SDK's own readers: Prometheus text beside the SDK's instruments, OTLP-style export in the exporter's temporality", async (t) => {
  const h = new Histogram('mcp.server.operation.duration', 'how long', 's', [0.01, 0.1])
  const prometheus = new PrometheusExporter({ preventServerStart: true, metricProducers: [new HistogramProducer([h], resource, 'mcp-pure-http', AggregationTemporality.CUMULATIVE)] })
  const exporter = new InMemoryMetricExporter(AggregationTemporality.DELTA)
  const periodic = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: 60_000,
    metricProducers: [new HistogramProducer([h], resource, 'mcp-pure-http', exporter.selectAggregationTemporality(InstrumentType.HISTOGRAM))]
  })
  const provider = new MeterProvider({ resource, readers: [prometheus, periodic] })
  t.teardown(() => provider.shutdown())
  provider.getMeter('mcp-pure-http').createCounter('sdk.counter').add(4)
  h.add('echo', { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo' }).record(0.02)

  const text = new PrometheusSerializer().serialize((await prometheus.collect()).resourceMetrics)
  t.match(text, /^# TYPE mcp_server_operation_duration histogram$/m)
  t.match(text, /^mcp_server_operation_duration_count\{[^}]*gen_ai_tool_name="echo"[^}]*\} 1\b/m)
  t.match(text, /^mcp_server_operation_duration_bucket\{[^}]*gen_ai_tool_name="echo"[^}]*le="0\.01"\} 0\b/m)
  t.match(text, /^mcp_server_operation_duration_bucket\{[^}]*gen_ai_tool_name="echo"[^}]*le="0\.1"\} 1\b/m)
  t.match(text, /^sdk_counter_total(\{[^}]*\})? 4\b/m, "the SDK's own instruments beside")

  await periodic.forceFlush()
  const sent = exporter.getMetrics().flatMap((rm) => rm.scopeMetrics).flatMap((s) => s.metrics)
  const ours = sent.find((m) => m.descriptor.name === 'mcp.server.operation.duration') as HistogramMetricData
  t.equal(ours.aggregationTemporality, AggregationTemporality.DELTA, "the exporter's temporality")
  t.equal(ours.dataPoints[0]!.value.count, 1)
})
