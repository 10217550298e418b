/**
 * Instructions per request, ours against bare Fastify, counted by callgrind (see
 * bench/lib/instructions.ts): `npm run build && node dist/bench/instructions.js --only "<workload>"
 * [--servers ours,bare] [--warm 12000] [--window 6000] [--windows 3] [--connections 32] [--cache]`,
 * a workload by its id as `npm run bench` names it. Each target runs alone, under callgrind, with a
 * redis-server of its own when the workload is a Redis one. Prints each window's count in the main
 * thread (the requests' own work) and in all threads (V8's collector and compiler too, lumpier), the
 * medians and their ratios; with `--cache`, the main thread's first-level cache misses a request
 * too (instruction fetches, data reads, data writes), from callgrind's simulation. Needs valgrind (Debian's `valgrind`) and h2load (`nghttp2-client`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { instructionsPerRequest, type CacheMisses } from './lib/instructions.js'
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
    connections: { type: 'string', default: '32' },
    cache: { type: 'boolean', default: false }
  }
})
const wanted = values.only?.trim().toLowerCase()
const found = phases(dist).flatMap((phase) => phase.workloads.filter((w) => w.id.toLowerCase() === wanted).map((workload) => ({ phase, workload })))[0]
if (found === undefined) {
  console.error(`--only names no workload: ${JSON.stringify(values.only)} (the ids \`npm run bench\` prints)`)
  process.exit(2)
}
const { phase, workload } = found
const options = { warm: Number(values.warm), window: Number(values.window), windows: Number(values.windows), connections: Number(values.connections), cache: values.cache }
const dir = mkdtempSync(join(tmpdir(), 'bench-instructions-'))
const files = new Files(dir)
const medians: Record<string, { main: number; all: number; misses?: CacheMisses }> = {}
const k = (n: number) => `${(n / 1000).toFixed(1)}k`
try {
  for (const target of values.servers.split(',').map((t) => t.trim())) {
    const spec = phase.servers.find((s) => s.id === target)
    const request = workload.requests[target]
    if (spec === undefined || request === undefined) throw new Error(`${target} does not run ${workload.id}`)
    const redis = phase.redis === true ? await startRedis() : undefined
    try {
      const env = serverEnv(phase, spec, redis === undefined ? {} : { MCP_REDIS_URL: redis.url })
      const counts = await instructionsPerRequest({ ...spec, ...(env === undefined ? {} : { env }) }, (base) => Promise.resolve(typeof request === 'function' ? request(base, files) : request), dir, options)
      const m: (typeof medians)[string] = { main: median(counts.map((c) => c.main)), all: median(counts.map((c) => c.all)) }
      medians[target] = m
      console.log(`${workload.id} · ${target}: instructions a request, main thread ${counts.map((c) => k(c.main)).join(' ')} (median ${k(m.main)}), all threads ${counts.map((c) => k(c.all)).join(' ')} (median ${k(m.all)})`)
      if (values.cache) {
        const misses = counts.map((c) => c.misses!)
        m.misses = { i1: median(misses.map((x) => x.i1)), d1Read: median(misses.map((x) => x.d1Read)), d1Write: median(misses.map((x) => x.d1Write)) }
        const each = (f: (x: CacheMisses) => number) => `${misses.map((x) => k(f(x))).join(' ')} (median ${k(f(m.misses!))})`
        console.log(`${workload.id} · ${target}: first-level cache misses a request in the main thread, instructions ${each((x) => x.i1)}, data reads ${each((x) => x.d1Read)}, data writes ${each((x) => x.d1Write)}`)
      }
    } finally {
      await redis?.stop()
    }
  }
  const { ours, bare } = medians
  if (ours !== undefined && bare !== undefined) {
    console.log(`ours / bare: ${(ours.main / bare.main).toFixed(3)} in the main thread, ${(ours.all / bare.all).toFixed(3)} in all threads (medians of the windows)`)
    if (ours.misses !== undefined && bare.misses !== undefined) {
      const r = (f: (x: CacheMisses) => number) => (f(ours.misses!) / f(bare.misses!)).toFixed(3)
      console.log(`ours / bare, first-level misses in the main thread: instructions ${r((x) => x.i1)}, data reads ${r((x) => x.d1Read)}, data writes ${r((x) => x.d1Write)}`)
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
