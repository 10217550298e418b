import { mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Files } from '../requests.js'
import { processOf, type Phase, type Workload } from '../workloads.js'
import { h2load } from './h2load.js'
import { startRedis, startServer } from './procs.js'

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }[]
  /** The node of each sample, and the µs since the previous one. */
  samples?: number[]
  timeDeltas?: number[]
}

/**
 * The profile's last `seconds` only (the measured run: start-up, module loading and the warm-up
 * left out), as hit counts per node.
 */
export function lastSeconds(p: CpuProfile, seconds: number): CpuProfile {
  if (p.samples === undefined || p.timeDeltas === undefined) return p
  const times: number[] = []
  let t = 0
  for (const d of p.timeDeltas) times.push((t += d))
  const from = t - seconds * 1e6
  const hits = new Map<number, number>()
  p.samples.forEach((id, i) => {
    if (times[i]! >= from) hits.set(id, (hits.get(id) ?? 0) + 1)
  })
  return { nodes: p.nodes.map((n) => ({ ...n, hitCount: hits.get(n.id) ?? 0 })) }
}

/**
 * Profile a server (`node --cpu-prof`; this project's unless `target` says another) under the first
 * workload whose id contains `name`, and print where its CPU goes. The .cpuprofile stays in
 * bench/.profiles for Chrome DevTools or speedscope.
 */
export async function profile(
  all: Phase[],
  name: string,
  target: string,
  settings: { connections: number; seconds: number; warmSeconds: number },
  files: Files,
  dir: string
): Promise<void> {
  const matches = (w: Workload) => w.id.includes(name) && w.requests[target] !== undefined
  const phase = all.find((p) => p.workloads.some(matches))
  if (phase === undefined) throw new Error(`no workload of ${target} matches "${name}"`)
  const workload = phase.workloads.find(matches)!
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const spec = phase.servers.find((s) => s.id === processOf(target))!
  // A Redis phase's server gets its own redis-server, as in a run.
  const redis = phase.redis === true ? await startRedis() : undefined
  const env = { ...spec.env, ...(redis === undefined ? {} : { MCP_REDIS_URL: redis.url }) }
  const server = await startServer({ ...spec, env, args: ['--cpu-prof', '--cpu-prof-dir', dir, ...spec.args] })
  try {
    const request = workload.requests[target]!
    const req = typeof request === 'function' ? await request(server.base, files) : request
    await h2load(server.base, req, { connections: settings.connections, seconds: settings.warmSeconds })
    const run = await h2load(server.base, req, { connections: settings.connections, seconds: settings.seconds })
    console.log(`profile: ${workload.id} on ${target}, ${run.rps.toFixed(0)} req/s (under the profiler)`)
  } finally {
    await server.stop()
    await redis?.stop()
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))
  if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`)
  // The measured run only; the SIGTERM's shutdown adds a little at the end.
  console.log(hotSpots(lastSeconds(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, settings.seconds + 0.5)))
  console.log(`\nfull profile: ${join(dir, file)}`)
}

/**
 * The top functions by self time and by total time (self and callees), as shares of the busy
 * samples (idle left out), and the busy time by package: where a request's CPU goes.
 */
export function hotSpots(p: CpuProfile, top = 25): string {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const key = (n: CpuProfile['nodes'][number]) => {
    const { functionName, url, lineNumber } = n.callFrame
    return `${functionName || '(anonymous)'}${url === '' ? '' : ` ${shorten(url)}:${lineNumber + 1}`}`
  }
  const self = new Map<string, number>()
  const total = new Map<string, number>()
  const area = new Map<string, number>()
  let busy = 0
  // Walk the call tree once; a sample counts once for every distinct function on its stack.
  const walk = (id: number, path: Set<string>) => {
    const n = byId.get(id)!
    const k = key(n)
    const hits = n.callFrame.functionName === '(idle)' ? 0 : (n.hitCount ?? 0)
    busy += hits
    self.set(k, (self.get(k) ?? 0) + hits)
    const a = areaOf(n.callFrame.url, n.callFrame.functionName)
    area.set(a, (area.get(a) ?? 0) + hits)
    const inner = path.has(k) ? path : new Set(path).add(k)
    for (const p of inner) if (hits > 0) total.set(p, (total.get(p) ?? 0) + hits)
    for (const child of n.children ?? []) walk(child, inner)
  }
  walk(p.nodes[0]!.id, new Set())
  const pct = (v: number) => ((v / busy) * 100).toFixed(1).padStart(5)
  const list = (m: Map<string, number>, skip: (k: string) => boolean) =>
    [...m].filter(([k]) => !skip(k)).sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => `${pct(v)}  ${k}`)
  return [
    'busy time by area:',
    ...[...area].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${pct(v)}  ${k}`),
    '',
    'self % of busy time:',
    ...list(self, () => false),
    '',
    "total % of busy time (with callees), this project's code:",
    ...list(total, (k) => !k.includes(' dist/'))
  ].join('\n')
}

function areaOf(url: string, fn: string): string {
  if (url === '') return fn.startsWith('(') ? fn : 'native'
  if (url.includes('/node_modules/')) return url.replace(/^.*\/node_modules\/((@[^/]+\/)?[^/]+).*$/, '$1')
  if (url.includes('/dist/')) return "this project's code"
  return 'node internals'
}

const shorten = (url: string) =>
  url.includes('/node_modules/') ? url.replace(/^.*\/node_modules\//, '~/') : url.replace(/^file:\/\//, '').replace(/^.*\/dist\//, 'dist/')
