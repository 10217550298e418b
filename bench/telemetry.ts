/**
 * The telemetry phase on its own (issue #19): `npm run build &&
 * taskset -c 1 node dist/bench/telemetry.js [--seconds N] [--reps N] [--connections N]`. Prints
 * the demo's echo throughput with telemetry off and on (OTLP traces to a local receiver,
 * /metrics on) and their ratio, which the issue wants at 0.9 or more.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { telemetryBench, telemetryLine } from './lib/telemetry.js'
import { Files } from './requests.js'

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, reps: { type: 'string', default: '3' }, connections: { type: 'string', default: '32' } } })
const dir = mkdtempSync(join(tmpdir(), 'bench-telemetry-'))
try {
  const result = await telemetryBench(dist, new Files(dir), { seconds: Number(values.seconds), reps: Number(values.reps), connections: Number(values.connections) })
  console.log(JSON.stringify(result))
  console.log(telemetryLine(result))
  if (result.ratio.median < 0.9) process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
