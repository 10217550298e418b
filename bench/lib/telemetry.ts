import { once } from 'node:events'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { h2load } from './h2load.js'
import { startServer } from './procs.js'
import type { Files } from '../requests.js'
import { TEXT } from '../requests.js'
import { STATE_KEYS } from '../workloads.js'

/** Throughput of the demo's `tools/call echo` with telemetry off and on, and what it cost. */
export interface TelemetryBench {
  offRps: number
  onRps: number
  /** on / off: the bar is at least 0.9. */
  ratio: number
  /** OTLP export requests the receiver took during the "on" runs, and their bytes (protobuf, the default). */
  exports: number
  exportBytes: number
}

/**
 * The telemetry phase (issue #19): the demo server (`npm start`) answering `tools/call echo`, once
 * as shipped (telemetry off: nothing loaded) and once with traces exported over OTLP/HTTP to a
 * receiver in this process and `/metrics` on (scraped between runs), runs alternated `reps` times.
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
  const otlp = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`
  const spec = { path: '/tools/echo/calls', bodyFile: files.body({ arguments: { text: TEXT } }), headers: { 'content-type': 'application/json' } }
  const best = { off: 0, on: 0 }
  try {
    for (let rep = 0; rep < options.reps; rep++) {
      for (const variant of ['off', 'on'] as const) {
        const env: Record<string, string> = { LOG_LEVEL: 'silent', MCP_STATE_KEYS: STATE_KEYS }
        if (variant === 'on') Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_SERVICE_NAME: 'bench', MCP_METRICS: 'true' })
        const server = await startServer({ id: `ours-telemetry-${variant}`, args: [join(dist, 'src/main.js')], env, readyPath: '/ping' })
        try {
          const result = await h2load(server.base, spec, { connections: options.connections, seconds: options.seconds })
          best[variant] = Math.max(best[variant], result.rps)
          if (variant === 'on') {
            const metrics = await (await fetch(`${server.base}/metrics`)).text()
            if (!metrics.includes('mcp_server_operation_duration_count')) throw new Error('/metrics has no mcp.server.operation.duration')
          }
        } finally {
          await server.stop()
        }
      }
    }
  } finally {
    receiver.close()
  }
  return { offRps: Math.round(best.off), onRps: Math.round(best.on), ratio: Math.round((best.on / best.off) * 1000) / 1000, exports, exportBytes }
}
