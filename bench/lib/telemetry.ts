import { once } from 'node:events'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { h2load } from './h2load.js'
import { cpuSeconds, startServer, type ServerSpec } from './procs.js'
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

/** Throughput of `tools/call echo` with telemetry off and on, and what it cost. */
export interface TelemetryBench {
  /** Medians over the launches of the demo's req/s: telemetry off, `/metrics` alone, traces and `/metrics`. */
  offRps: number
  metricsRps: number
  onRps: number
  /** on / off per launch: the bar is at least 0.9. */
  ratio: Spread
  /** `/metrics` alone / off per launch. */
  metricsRatio: Spread
  /** The same on / off for bare Fastify with the official SDK's least (bench/servers/bare-telemetry.ts). */
  floorRatio: Spread
  /** CPU µs per request the telemetry adds (median over launches): this server, and the floor. */
  addedUs: number
  floorAddedUs: number
  /** OTLP export requests the receiver took during the "on" runs, and their bytes (protobuf, the default). */
  exports: number
  exportBytes: number
}

const spread = (xs: number[]): Spread => ({ median: round(median(xs)), min: round(Math.min(...xs)), max: round(Math.max(...xs)) })
const round = (x: number): number => Math.round(x * 1000) / 1000

/**
 * The telemetry phase (issue #19): the demo server (`npm start`) answering `tools/call echo` as
 * shipped (telemetry off: nothing loaded), with `/metrics` alone, and with traces exported over
 * OTLP/HTTP to a receiver in this process and `/metrics` on (scraped after each run); and bare
 * Fastify's echo off and with the least telemetry the official SDK can do by the conventions (the
 * floor: what any server pays for a span and a histogram record per request on this Node). Every
 * launch starts each of the five afresh, in an order reversed every other launch; each ratio is the
 * median of the per-launch ratios, with its range.
 */
export async function telemetryBench(dist: string, files: Files, options: { seconds: number; connections: number; reps: number }): Promise<TelemetryBench> {
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
    floorOn: { id: 'bare-telemetry-on', ...floor, env: { ...otlp, TELEMETRY: 'on' } }
  }
  const launches: Record<string, { rps: number; cpuUs: number }>[] = []
  try {
    for (let rep = 0; rep < options.reps; rep++) {
      const launch: Record<string, { rps: number; cpuUs: number }> = {}
      const order = Object.keys(variants)
      for (const name of rep % 2 === 0 ? order : order.reverse()) {
        const server = await startServer(variants[name]!)
        try {
          await h2load(server.base, spec, { connections: options.connections, seconds: Math.min(2, options.seconds) })
          const cpu0 = cpuSeconds(server.pid)
          const result = await h2load(server.base, spec, { connections: options.connections, seconds: options.seconds })
          launch[name] = { rps: result.rps, cpuUs: ((cpuSeconds(server.pid) - cpu0) * 1e6) / Math.max(1, result.requests) }
          if (name === 'on' || name === 'metrics') {
            const metrics = await (await fetch(`${server.base}/metrics`)).text()
            if (!metrics.includes('mcp_server_operation_duration_count')) throw new Error('/metrics has no mcp.server.operation.duration')
          }
        } finally {
          await server.stop()
        }
      }
      launches.push(launch)
    }
  } finally {
    receiver.close()
  }
  const of = (f: (l: Record<string, { rps: number; cpuUs: number }>) => number): number[] => launches.map(f)
  return {
    offRps: Math.round(median(of((l) => l.off!.rps))),
    metricsRps: Math.round(median(of((l) => l.metrics!.rps))),
    onRps: Math.round(median(of((l) => l.on!.rps))),
    ratio: spread(of((l) => l.on!.rps / l.off!.rps)),
    metricsRatio: spread(of((l) => l.metrics!.rps / l.off!.rps)),
    floorRatio: spread(of((l) => l.floorOn!.rps / l.floorOff!.rps)),
    addedUs: Math.round(median(of((l) => l.on!.cpuUs - l.off!.cpuUs))),
    floorAddedUs: Math.round(median(of((l) => l.floorOn!.cpuUs - l.floorOff!.cpuUs))),
    exports,
    exportBytes
  }
}

/** One line of the phase's result, with its verdict against the 0.90. */
export function telemetryLine(x: TelemetryBench): string {
  const pct = (s: Spread): string => `${(s.median * 100).toFixed(1)}% (${(s.min * 100).toFixed(1)}-${(s.max * 100).toFixed(1)})`
  return `telemetry: echo ${x.offRps} req/s off, ${x.metricsRps} with /metrics (${pct(x.metricsRatio)}), ${x.onRps} with traces and /metrics ` +
    `(${pct(x.ratio)}, target >= 90%: ${x.ratio.median >= 0.9 ? 'PASS' : 'MISS'}; +${x.addedUs} µs CPU per request); ` +
    `the official SDK's floor on bare Fastify: ${pct(x.floorRatio)} (+${x.floorAddedUs} µs); ${x.exports} OTLP exports (${x.exportBytes} bytes)`
}
