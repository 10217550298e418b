import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { growth, soakGrowth, verdicts, type Results, type Soak } from '../report.js'
import type { Files } from '../requests.js'
import type { Phase } from '../workloads.js'
import { h2load, type RequestSpec } from './h2load.js'
import { memory, startServer } from './procs.js'

/** The steady load of a soak: [workload of the core phase, connections, requests/s per connection]. */
const MIX: [string, number, number][] = [
  ['tools/call echo', 4, 250],
  ['MRTR round 1 (seal)', 2, 100],
  ['MRTR round 2 (open)', 2, 100]
]
const SAMPLE_EVERY_MS = 5000

const PROBE = join(dirname(fileURLToPath(import.meta.url)), 'heap-probe.js')

/**
 * Run the demo server (this project's, from the core phase) at a steady rate for `seconds`,
 * sampling its RSS from outside and, through bench/lib/heap-probe.ts, what it keeps after a full
 * collection; report the growth of both: a server that keeps nothing per request stays flat.
 * Writes bench/results/soak.json.
 */
export async function soak(core: Phase, seconds: number, files: Files, resultsDir: string): Promise<void> {
  const heapFile = join(files.dir, 'heap.jsonl')
  rmSync(heapFile, { force: true })
  const spec = core.servers.find((s) => s.id === 'ours')!
  const server = await startServer({
    ...spec,
    args: ['--expose-gc', '--import', PROBE, ...spec.args],
    env: { ...spec.env, HEAP_PROBE_FILE: heapFile, HEAP_PROBE_MS: String(SAMPLE_EVERY_MS) }
  })
  const rps = MIX.reduce((sum, [, c, r]) => sum + c * r, 0)
  console.log(`soak: ${seconds} s at ${rps} req/s (${MIX.map(([w, c, r]) => `${w} ${c * r}/s`).join(', ')}), RSS every ${SAMPLE_EVERY_MS / 1000} s`)
  const samples: { t: number; rssMb: number }[] = []
  const start = Date.now()
  const timer = setInterval(() => {
    const t = Math.round((Date.now() - start) / 1000)
    const { rssMb } = memory(server.pid)
    samples.push({ t, rssMb: Math.round(rssMb * 10) / 10 })
    if (samples.length % 12 === 0) console.log(`  ${t} s: RSS ${rssMb.toFixed(1)} MB`)
  }, SAMPLE_EVERY_MS)
  try {
    const loads = []
    for (const [id, connections, perConnection] of MIX) {
      const request = core.workloads.find((w) => w.id === id)!.requests.ours!
      const spec: RequestSpec = typeof request === 'function' ? await request(server.base, files) : request
      loads.push(h2load(server.base, spec, { connections, seconds, rps: perConnection }))
    }
    const done = await Promise.all(loads)
    clearInterval(timer)
    const rss = soakGrowth(samples)
    const heapSamples = existsSync(heapFile)
      ? readFileSync(heapFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { t: number; heapMb: number; externalMb: number })
      : []
    const heap: Soak['heap'] = { samples: heapSamples, ...growth(heapSamples.map((s) => s.heapMb + s.externalMb)) }
    const results: Results = {
      meta: { date: new Date().toISOString(), mode: 'soak', seconds },
      measurements: [],
      peakRss: { 'ours@soak': Math.round(memory(server.pid).peakMb * 10) / 10 },
      soak: { seconds, rps, samples, ...rss, heap },
      skipped: [],
      notes: done.map((d, i) => `${MIX[i]![0]}: ${d.requests} requests, ${d.rps.toFixed(0)} req/s`)
    }
    mkdirSync(resultsDir, { recursive: true })
    writeFileSync(join(resultsDir, 'soak.json'), JSON.stringify(results, null, 2) + '\n')
    console.log(results.notes.join('\n'))
    console.log(`RSS ${samples[0]?.rssMb} MB at first sample, ${samples.at(-1)?.rssMb} MB at the end; growth after warm-up ${rss.growthMb.toFixed(1)} MB (${rss.growthPct.toFixed(1)}%), peak ${results.peakRss['ours@soak']} MB`)
    const kept = (s?: { heapMb: number; externalMb: number }) => (s === undefined ? '-' : (s.heapMb + s.externalMb).toFixed(1))
    console.log(`kept after a full GC (heap + external): ${kept(heapSamples[0])} MB at first sample, ${kept(heapSamples.at(-1))} MB at the end; growth after warm-up ${heap.growthMb.toFixed(2)} MB (${heap.growthPct.toFixed(1)}%)`)
    console.log(verdicts(results))
    console.log('wrote bench/results/soak.json')
  } finally {
    clearInterval(timer)
    await server.stop()
  }
}
