/**
 * Instructions per request, ours against bare Fastify, counted by callgrind (see
 * bench/lib/instructions.ts): `npm run build && node dist/bench/instructions.js --only "<workload>"
 * [--servers ours,bare] [--warm 12000] [--window 6000] [--windows 3] [--connections 32]`, a
 * workload by its id as `npm run bench` names it. Each target runs alone, under callgrind, with a
 * redis-server of its own when the workload is a Redis one. Prints each window's count, the medians
 * and their ratio. Needs valgrind (Debian's `valgrind`) and h2load (`nghttp2-client`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { instructionsPerRequest } from './lib/instructions.js'
import { startRedis } from './lib/procs.js'
import { median } from './report.js'
import { Files } from './requests.js'
import { phases, serverEnv } from './workloads.js'

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    servers: { type: 'string', default: 'ours,bare' },
    warm: { type: 'string', default: '12000' },
    window: { type: 'string', default: '6000' },
    windows: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' }
  }
})
const wanted = values.only?.trim().toLowerCase()
const found = phases(dist).flatMap((phase) => phase.workloads.filter((w) => w.id.toLowerCase() === wanted).map((workload) => ({ phase, workload })))[0]
if (found === undefined) {
  console.error(`--only names no workload: ${JSON.stringify(values.only)} (the ids \`npm run bench\` prints)`)
  process.exit(2)
}
const { phase, workload } = found
const options = { warm: Number(values.warm), window: Number(values.window), windows: Number(values.windows), connections: Number(values.connections) }
const dir = mkdtempSync(join(tmpdir(), 'bench-instructions-'))
const files = new Files(dir)
const medians: Record<string, number> = {}
try {
  for (const target of values.servers.split(',').map((t) => t.trim())) {
    const spec = phase.servers.find((s) => s.id === target)
    const request = workload.requests[target]
    if (spec === undefined || request === undefined) throw new Error(`${target} does not run ${workload.id}`)
    const redis = phase.redis === true ? await startRedis() : undefined
    try {
      const env = serverEnv(phase, spec, redis === undefined ? {} : { MCP_REDIS_URL: redis.url })
      const counts = await instructionsPerRequest({ ...spec, ...(env === undefined ? {} : { env }) }, (base) => Promise.resolve(typeof request === 'function' ? request(base, files) : request), dir, options)
      medians[target] = median(counts)
      console.log(`${workload.id} · ${target}: ${counts.map((n) => `${(n / 1000).toFixed(1)}k`).join(' ')} instructions a request (median ${(medians[target]! / 1000).toFixed(1)}k)`)
    } finally {
      await redis?.stop()
    }
  }
  if (medians.ours !== undefined && medians.bare !== undefined) console.log(`ours / bare: ${(medians.ours / medians.bare).toFixed(3)} (medians of the windows)`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
