import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { soakGrowth, verdicts, type Results } from '../report.js'
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

/**
 * Run the demo server (this project's, from the core phase) at a steady rate for `seconds`,
 * sampling its RSS, and report the growth: a server that keeps nothing per request stays flat.
 * Writes bench/results/soak.json.
 */
export async function soak(core: Phase, seconds: number, files: Files, resultsDir: string): Promise<void> {
  const server = await startServer(core.servers.find((s) => s.id === 'ours')!)
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
    const growth = soakGrowth(samples)
    const results: Results = {
      meta: { date: new Date().toISOString(), mode: 'soak', seconds },
      measurements: [],
      peakRss: { 'ours@soak': Math.round(memory(server.pid).peakMb * 10) / 10 },
      soak: { seconds, rps, samples, ...growth },
      skipped: [],
      notes: done.map((d, i) => `${MIX[i]![0]}: ${d.requests} requests, ${d.rps.toFixed(0)} req/s`)
    }
    mkdirSync(resultsDir, { recursive: true })
    writeFileSync(join(resultsDir, 'soak.json'), JSON.stringify(results, null, 2) + '\n')
    console.log(results.notes.join('\n'))
    console.log(`RSS ${samples[0]?.rssMb} MB at first sample, ${samples.at(-1)?.rssMb} MB at the end; growth after warm-up ${growth.growthMb.toFixed(1)} MB (${growth.growthPct.toFixed(1)}%), peak ${results.peakRss['ours@soak']} MB`)
    console.log(verdicts(results))
    console.log('wrote bench/results/soak.json')
  } finally {
    clearInterval(timer)
    await server.stop()
  }
}
