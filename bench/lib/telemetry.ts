import { once } from 'node:events'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { h2load } from './h2load.js'
import { cpuSeconds, settle, startServer, type Running, type ServerSpec } from './procs.js'
import type { Files } from '../requests.js'
import { TEXT } from '../requests.js'
import { median } from '../report.js'
import { STATE_KEYS } from '../workloads.js'

/** A ratio over launches: the median of the per-launch ratios and their range. */
export interface Spread {
  median: number
  min: number
  max: number
}

/** `tools/call echo` with telemetry off and on: what it costs, by issue 40's method. */
export interface TelemetryBench {
  /** Medians over the launches of the demo's req/s: telemetry off, `/metrics` alone, traces and `/metrics`. */
  offRps: number
  metricsRps: number
  onRps: number
  /** Medians over the launches of the demo's CPU µs per request, the same three. */
  offUs: number
  metricsUs: number
  onUs: number
  /** on / off by req/s per launch (issue 19's bar was 0.9; the floor below shows why no server meets it). */
  ratio: Spread
  /** `/metrics` alone / off by req/s per launch. */
  metricsRatio: Spread
  /** The same on / off for bare Fastify with the official SDK's least (bench/servers/bare-telemetry.ts). */
  floorRatio: Spread
  /** CPU µs per request the telemetry adds (median over launches): this server, and the floor. */
  addedUs: number
  floorAddedUs: number
  /** Issue 40: CPU per request, `/metrics` alone over off, per launch (target <= 1.1). */
  metricsCpu: Spread
  /** Issue 40: what traces and `/metrics` add over what the floor adds, CPU per request, per launch (target <= 1.1). */
  addedOverFloor: Spread
  /** The floor with the span this server makes (the conventions' recommended attributes too): what it adds, and ours over it. */
  sameFloorAddedUs: number
  addedOverSameFloor: Spread
  /** OTLP export requests the receiver took during the "on" runs, and their bytes (protobuf, the default). */
  exports: number
  exportBytes: number
}

/** Issue 40's targets for the telemetry phase. */
export const TELEMETRY_TARGETS = { metricsCpu: 1.1, addedOverFloor: 1.1 }

const spread = (xs: number[]): Spread => ({ median: round(median(xs)), min: round(Math.min(...xs)), max: round(Math.max(...xs)) })
const round = (x: number): number => Math.round(x * 1000) / 1000

interface Run {
  rps: number
  cpuUs: number
}

/**
 * The telemetry phase: the demo server (`npm start`) answering `tools/call echo` as shipped
 * (telemetry off: nothing loaded), with `/metrics` alone, and with traces exported over OTLP/HTTP to
 * a receiver in this process and `/metrics` on (scraped after each run); and bare Fastify's echo off
 * and with the least telemetry the official SDK can do by the conventions (the floor: what any
 * server pays for a span and a histogram record per request on this Node). Every launch starts the
 * five afresh, warms each, then runs each `reps` times in turns (reversed every other turn) and keeps
 * each one's least CPU per request and best req/s; each ratio is the median of the per-launch
 * ratios, with its range.
 */
export async function telemetryBench(
  dist: string,
  files: Files,
  options: { seconds: number; connections: number; launches: number; reps?: number; warmSeconds?: number }
): Promise<TelemetryBench> {
  let exports = 0
  let exportBytes = 0
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      exports++
      exportBytes += Buffer.concat(chunks).length
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  receiver.listen(0, '127.0.0.1')
  await once(receiver, 'listening')
  const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as { port: number }).port}`, OTEL_SERVICE_NAME: 'bench' }
  const spec = { path: '/tools/echo/calls', bodyFile: files.body({ arguments: { text: TEXT } }), headers: { 'content-type': 'application/json' } }
  const demo = { args: [join(dist, 'src/main.js')], readyPath: '/health' }
  const floor = { args: [join(dist, 'bench/servers/bare-telemetry.js')], readyPath: '/ping' }
  const base = { LOG_LEVEL: 'silent', MCP_STATE_KEYS: STATE_KEYS }
  const variants: Record<string, ServerSpec> = {
    off: { id: 'ours-telemetry-off', ...demo, env: base },
    metrics: { id: 'ours-telemetry-metrics', ...demo, env: { ...base, MCP_METRICS: 'true' } },
    on: { id: 'ours-telemetry-on', ...demo, env: { ...base, ...otlp, MCP_METRICS: 'true' } },
    floorOff: { id: 'bare-telemetry-off', ...floor, env: { TELEMETRY: 'off' } },
    floorOn: { id: 'bare-telemetry-on', ...floor, env: { ...otlp, TELEMETRY: 'on' } },
    floorSame: { id: 'bare-telemetry-same', ...floor, env: { ...otlp, TELEMETRY: 'on', ATTRIBUTES: 'conventions' } }
  }
  const reps = options.reps ?? 2
  const launches: Record<string, Run>[] = []
  try {
    for (let l = 0; l < options.launches; l++) {
      const names = Object.keys(variants)
      const servers = new Map<string, Running>()
      try {
        for (const name of names) servers.set(name, await startServer(variants[name]!))
        // Warm each (JIT, heap), then turns: every variant measured close in time to the others.
        for (const name of names) await h2load(servers.get(name)!.base, spec, { connections: options.connections, seconds: options.warmSeconds ?? 8 })
        const best: Record<string, Run> = {}
        for (let rep = 0; rep < reps; rep++) {
          const order = (rep + l) % 2 === 0 ? names : [...names].reverse()
          for (const name of order) {
            const server = servers.get(name)!
            await settle([...servers.values()].map((s) => s.pid))
            const cpu0 = cpuSeconds(server.pid)
            const result = await h2load(server.base, spec, { connections: options.connections, seconds: options.seconds })
            const run = { rps: result.rps, cpuUs: ((cpuSeconds(server.pid) - cpu0) * 1e6) / Math.max(1, result.requests) }
            const was = best[name]
            best[name] = was === undefined ? run : { rps: Math.max(was.rps, run.rps), cpuUs: Math.min(was.cpuUs, run.cpuUs) }
          }
        }
        for (const name of ['on', 'metrics']) {
          const metrics = await (await fetch(`${servers.get(name)!.base}/metrics`)).text()
          if (!metrics.includes('mcp_server_operation_duration_count')) throw new Error('/metrics has no mcp.server.operation.duration')
        }
        launches.push(best)
      } finally {
        await Promise.all([...servers.values()].map((s) => s.stop()))
      }
    }
  } finally {
    receiver.close()
  }
  const of = (f: (l: Record<string, Run>) => number): number[] => launches.map(f)
  return {
    offRps: Math.round(median(of((l) => l.off!.rps))),
    metricsRps: Math.round(median(of((l) => l.metrics!.rps))),
    onRps: Math.round(median(of((l) => l.on!.rps))),
    offUs: round1(median(of((l) => l.off!.cpuUs))),
    metricsUs: round1(median(of((l) => l.metrics!.cpuUs))),
    onUs: round1(median(of((l) => l.on!.cpuUs))),
    ratio: spread(of((l) => l.on!.rps / l.off!.rps)),
    metricsRatio: spread(of((l) => l.metrics!.rps / l.off!.rps)),
    floorRatio: spread(of((l) => l.floorOn!.rps / l.floorOff!.rps)),
    addedUs: round1(median(of((l) => l.on!.cpuUs - l.off!.cpuUs))),
    floorAddedUs: round1(median(of((l) => l.floorOn!.cpuUs - l.floorOff!.cpuUs))),
    metricsCpu: spread(of((l) => l.metrics!.cpuUs / l.off!.cpuUs)),
    addedOverFloor: spread(of((l) => (l.on!.cpuUs - l.off!.cpuUs) / (l.floorOn!.cpuUs - l.floorOff!.cpuUs))),
    sameFloorAddedUs: round1(median(of((l) => l.floorSame!.cpuUs - l.floorOff!.cpuUs))),
    addedOverSameFloor: spread(of((l) => (l.on!.cpuUs - l.off!.cpuUs) / (l.floorSame!.cpuUs - l.floorOff!.cpuUs))),
    exports,
    exportBytes
  }
}

const round1 = (x: number): number => Math.round(x * 10) / 10

/** Whether the phase meets issue 40's targets. */
export function telemetryPasses(x: TelemetryBench): boolean {
  return x.metricsCpu.median <= TELEMETRY_TARGETS.metricsCpu && x.addedOverFloor.median <= TELEMETRY_TARGETS.addedOverFloor
}

/** The phase's result, with its verdicts against issue 40's targets. */
export function telemetryLine(x: TelemetryBench): string {
  const r = (s: Spread): string => `${s.median.toFixed(2)} (${s.min.toFixed(2)}-${s.max.toFixed(2)})`
  const verdict = (s: Spread, target: number): string => `target <= ${target.toFixed(2)}: ${s.median <= target ? 'PASS' : 'MISS'}`
  return [
    `telemetry, echo: off ${x.offUs} µs CPU/req (${x.offRps} req/s), /metrics alone ${x.metricsUs} µs (${x.metricsRps} req/s), traces and /metrics ${x.onUs} µs (${x.onRps} req/s)`,
    `  /metrics alone over off, CPU per request: ${r(x.metricsCpu)} (${verdict(x.metricsCpu, TELEMETRY_TARGETS.metricsCpu)}; req/s ${r(x.metricsRatio)})`,
    `  traces and /metrics add ${x.addedUs} µs, the official SDK's floor adds ${x.floorAddedUs} µs to bare Fastify: ${r(x.addedOverFloor)} of the floor (${verdict(x.addedOverFloor, TELEMETRY_TARGETS.addedOverFloor)}; req/s on/off ${r(x.ratio)}, floor ${r(x.floorRatio)})`,
    `  the floor making the span this server makes (the conventions' recommended attributes too) adds ${x.sameFloorAddedUs} µs: ours ${r(x.addedOverSameFloor)} of it`,
    `  ${x.exports} OTLP exports (${x.exportBytes} bytes)`
  ].join('\n')
}
