/**
 * The telemetry phase on its own: `npm run build && taskset -c 1 node dist/bench/telemetry.js
 * [--launches N] [--seconds N] [--reps N] [--connections N]`. Prints the demo's echo CPU per
 * request with telemetry off, `/metrics` alone and traces with `/metrics` (OTLP to a local
 * receiver), bare Fastify's with the official SDK's least, and issue 40's verdicts: `/metrics`
 * alone within 1.1x of off, and traces with `/metrics` adding at most 1.1x what the floor adds.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { telemetryBench, telemetryLine, telemetryPasses } from './lib/telemetry.js'
import { Files } from './requests.js'

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({
  options: { launches: { type: 'string', default: '5' }, seconds: { type: 'string', default: '5' }, reps: { type: 'string', default: '2' }, connections: { type: 'string', default: '32' } }
})
const dir = mkdtempSync(join(tmpdir(), 'bench-telemetry-'))
try {
  const result = await telemetryBench(dist, new Files(dir), {
    launches: Number(values.launches),
    seconds: Number(values.seconds),
    reps: Number(values.reps),
    connections: Number(values.connections)
  })
  console.log(JSON.stringify(result))
  console.log(telemetryLine(result))
  if (!telemetryPasses(result)) process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
