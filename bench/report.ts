import type { FunctionsBench } from './lib/functions.js'
import type { TelemetryBench } from './lib/telemetry.js'
import type { Capacity } from './lib/capacity.js'
import type { LedgerSpread } from './lib/ledger.js'
import type { RoundTrips } from './lib/roundtrips.js'

/**
 * The results file (`bench/results/latest.json`), and what is computed from it: ratios, the
 * pass/fail of the targets and the text table (the chart is chart.ts). Pure functions of
 * the data, so `test/deploy/bench.test.ts` checks them on a fixture in milliseconds.
 */

/**
 * One workload against one target. Per launch of the servers: the best run (highest req/s) with its
 * latency, and the lowest CPU per request (`launches`); the top-level numbers are their medians.
 */
export interface Measurement {
  workload: string
  target: string
  rps: number
  p50Ms: number
  p99Ms: number
  /** Server CPU time per request (all its threads), the lowest of the runs, in µs. */
  cpuUsPerRequest: number
  /**
   * CPU time of the phase's one redis-server per request, the lowest of the runs, in µs: what one
   * Redis core can feed (1e6 / this requests a second) however many instances stand in front of it.
   */
  redisUsPerRequest?: number
  bytesPerResponse: number
  /** Resident memory right after the workload, and the process's peak so far (VmHWM), in MB. */
  rssMb: number
  peakMb: number
  runs: { rps: number; p50Ms: number; p99Ms: number; cpuUsPerRequest: number }[]
  /** One entry per fresh launch of the servers (absent in results from before launches were counted). */
  launches?: { rps: number; p50Ms: number; p99Ms: number; cpuUsPerRequest: number; redisUsPerRequest?: number }[]
}

export interface Results {
  meta: Record<string, string | number>
  measurements: Measurement[]
  /** Peak RSS (VmHWM, MB) of each server process at the end of its phase: `target@phase`. */
  peakRss: Record<string, number>
  seal?: { usPerSealOpen: number; usPerSeal: number; usPerOpen: number }
  /** Webhook deliveries per second to a loopback receiver (bench/lib/webhooks.ts). */
  webhooks?: { messages: number; memoryPerSec: number; redisPerSec?: number }
  /** Echo with telemetry on against off (bench/lib/telemetry.ts). */
  telemetry?: TelemetryBench
  soak?: Soak
  /** Redis round trips and commands per request (bench/lib/roundtrips.ts). */
  roundTrips?: RoundTrips[]
  /** Redis memory per unit of state (bench/lib/capacity.ts). */
  capacity?: Capacity
  /** Task creation's Redis CPU on each master (bench/lib/ledger.ts). */
  ledger?: LedgerSpread
  functions?: FunctionsBench
  /** Workloads of the issue not run, with the feature they wait for. */
  skipped: { workload: string; reason: string }[]
  notes: string[]
}

export interface Soak {
  seconds: number
  rps: number
  samples: { t: number; rssMb: number }[]
  /** RSS at the end against the plateau after warm-up, in MB and %. */
  growthMb: number
  growthPct: number
  pass: boolean
  /**
   * What survives a forced full collection (JS heap and external memory), sampled in the server
   * by bench/lib/heap-probe.ts, and its growth: what the soak target is judged by when present.
   */
  heap?: { samples: { t: number; heapMb: number; externalMb: number }[]; growthMb: number; growthPct: number; pass: boolean }
}

export interface Check {
  name: string
  value: number
  limit: number
  /** How the value compares to the limit to pass. */
  op: '>=' | '<='
  pass: boolean
  unit: string
  /** For ratios over several launches: the lowest and highest per-launch ratio, and how many. */
  spread?: { min: number; max: number; launches: number }
  /**
   * For throughput ratios: the same ratio from CPU time per request, which holds when other work
   * takes CPU from the servers (req/s then measures the share of the core each server got).
   */
  byCpu?: number
  /** For CPU ratios: the req/s ratio of the same launches, shown beside. */
  rps?: number
}

/** Display names of the targets, in table order. */
export const TARGETS: Record<string, string> = {
  ours: 'mcp-pure-http',
  bare: 'bare Fastify',
  'sdk-v1': 'SDK v1 (Express)',
  'sdk-v2': 'SDK v2 (Fastify adapter)',
  'sdk-v2-modern': 'SDK v2 createMcpHandler'
}
export const ORDER = Object.keys(TARGETS)
export const SDKS = ORDER.filter((t) => t.startsWith('sdk'))

/**
 * Issue 40's targets, for this project's server against bare Fastify doing the same work and sending
 * the same headers: CPU time per request at most `cpu` times bare's (the median of per-launch
 * pairs), and p99 at most `p99` times. In the Redis phases bare Fastify keeps its notifications and
 * tasks in the same Redis (bench/servers/redis-ceiling.ts), and a request's cost is the server's CPU
 * and Redis's together. (Issue 22's were req/s floors: req/s moves with the machine's other work,
 * CPU per request far less.)
 */
export const RATIO_TARGETS: Record<string, { cpu: number; p99?: number }> = {
  'tools/call echo': { cpu: 1.15, p99: 1.5 },
  'tools/list (200 tools)': { cpu: 1.15, p99: 1.5 },
  'tools/list 304 (200 tools)': { cpu: 1.15, p99: 1.5 },
  'MRTR round 1 (seal)': { cpu: 1.15, p99: 1.5 },
  'MRTR round 2 (open)': { cpu: 1.15, p99: 1.5 },
  'task: poll a completed task': { cpu: 1.15, p99: 1.5 },
  'GET /notifications (nothing pending)': { cpu: 1.15, p99: 1.5 },
  'GET /notifications (nothing pending, Redis store)': { cpu: 1.15 },
  'GET /notifications (1,000 queued, Redis store)': { cpu: 1.15 },
  'task: create (202, Redis store)': { cpu: 1.15 },
  'task: poll a completed task (Redis store)': { cpu: 1.15 },
  'MRTR round 1 (seal, Redis store)': { cpu: 1.15 },
  'MRTR round 2 (open, Redis store)': { cpu: 1.15 }
}

/** What a request costs: the server's CPU, and with a Redis store Redis's too. */
const cost = (x: { cpuUsPerRequest: number; redisUsPerRequest?: number }) => x.cpuUsPerRequest + (x.redisUsPerRequest ?? 0)

/** The median of a list (the mean of the middle two when even); NaN when empty. */
export function median(xs: number[]): number {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/**
 * `f(a) / f(b)` per launch when both were measured over the same launches (paired: the servers of
 * one launch ran side by side), else once from the medians.
 */
export function pairedRatios(
  a: Measurement,
  b: Measurement,
  f: (x: { rps: number; p99Ms: number; cpuUsPerRequest: number; redisUsPerRequest?: number }) => number
): number[] {
  if (a.launches !== undefined && b.launches !== undefined && a.launches.length === b.launches.length && a.launches.length > 0) {
    return a.launches.map((l, i) => f(l) / f(b.launches![i]!))
  }
  return [f(a) / f(b)]
}
export const SDK_FACTOR = 20
export const SEAL_LIMIT_US = 100
/**
 * A soak passes when the memory the server keeps (heap and external memory after a full
 * collection; RSS in results without those samples) is at the end within this much of the
 * plateau after warm-up.
 */
export const SOAK_LIMIT_PCT = 10

export const find = (r: Results, workload: string, target: string) =>
  r.measurements.find((m) => m.workload === workload && m.target === target)

/** Workloads in the order they were measured. */
export const workloads = (r: Results): string[] => [...new Set(r.measurements.map((m) => m.workload))]

/** The targets, each with its value from this run. Targets whose numbers are missing are left out. */
export function checks(r: Results): Check[] {
  const out: Check[] = []
  const check = (name: string, value: number, op: Check['op'], limit: number, unit: string, byCpu?: number, ratios?: number[], rps?: number) =>
    out.push({
      name,
      value,
      op,
      limit,
      unit,
      pass: op === '>=' ? value >= limit : value <= limit,
      ...(byCpu === undefined ? {} : { byCpu }),
      ...(rps === undefined ? {} : { rps }),
      ...(ratios === undefined || ratios.length < 2 ? {} : { spread: { min: Math.min(...ratios), max: Math.max(...ratios), launches: ratios.length } })
    })
  // A ratio is the median of the per-launch pairs; a target is met only when that median meets it.
  const ratioCheck = (name: string, ratios: number[], op: Check['op'], limit: number, byCpu?: number, rps?: number) =>
    check(name, median(ratios), op, limit, 'x', byCpu, ratios, rps)
  for (const workload of workloads(r)) {
    const ours = find(r, workload, 'ours')
    const bare = find(r, workload, 'bare')
    const goal = RATIO_TARGETS[workload]
    if (ours === undefined) continue
    if (goal !== undefined && bare !== undefined) {
      const rps = median(pairedRatios(ours, bare, (x) => x.rps))
      // A bare run that served nothing (infinite CPU per request) decides nothing.
      const ratios = pairedRatios(ours, bare, cost).map((x) => (x > 0 && Number.isFinite(x) ? x : NaN))
      ratioCheck(`${workload}: CPU per request vs bare Fastify`, ratios, '<=', goal.cpu, undefined, rps)
      if (goal.p99 !== undefined) ratioCheck(`${workload}: p99 vs bare Fastify`, pairedRatios(ours, bare, (x) => x.p99Ms), '<=', goal.p99)
    }
    for (const sdk of SDKS) {
      const other = find(r, workload, sdk)
      // A gateway's SDK server is its own upstream, served directly: a comparison, not a target.
      if (other !== undefined && !workload.includes('(gateway')) {
        const byCpu = median(pairedRatios(other, ours, (x) => x.cpuUsPerRequest))
        ratioCheck(`${workload}: req/s vs ${TARGETS[sdk]}`, pairedRatios(ours, other, (x) => x.rps), '>=', SDK_FACTOR, byCpu)
      }
    }
  }
  if (r.seal !== undefined) check('seal + open one requestState', r.seal.usPerSealOpen, '<=', SEAL_LIMIT_US, 'µs')
  if (r.soak?.heap !== undefined) check(`soak ${r.soak.seconds} s: heap + external after GC, growth`, r.soak.heap.growthPct, '<=', SOAK_LIMIT_PCT, '%')
  else if (r.soak !== undefined) check(`soak ${r.soak.seconds} s: RSS growth`, r.soak.growthPct, '<=', SOAK_LIMIT_PCT, '%')
  return out
}

/**
 * Growth of a soak's RSS: the median of the last fifth of the samples against the median of the
 * second fifth (the first is warm-up: JIT, heap growth to its working size). Fewer than five
 * samples cannot tell a plateau from a slope: that soak does not pass.
 */
export function soakGrowth(samples: { t: number; rssMb: number }[]): { growthMb: number; growthPct: number; pass: boolean } {
  return growth(samples.map((s) => s.rssMb))
}

/** {@link soakGrowth} of any series of samples in time order. */
export function growth(values: number[]): { growthMb: number; growthPct: number; pass: boolean } {
  if (values.length < 5) return { growthMb: NaN, growthPct: NaN, pass: false }
  const fifth = Math.floor(values.length / 5)
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const plateau = median(values.slice(fifth, 2 * fifth))
  const end = median(values.slice(-fifth))
  const growthMb = end - plateau
  const growthPct = (growthMb / plateau) * 100
  return { growthMb, growthPct, pass: growthPct <= SOAK_LIMIT_PCT }
}

export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
export const ratio = (n: number) => (!Number.isFinite(n) ? '-' : n >= 10 ? `${n.toFixed(0)}x` : `${n.toFixed(2)}x`)

/** The results as a Markdown table (also readable as plain text), one row per workload and target. */
export function table(r: Results): string {
  const rows = [
    '| workload | server | req/s | p50 ms | p99 ms | CPU µs/req | Redis CPU µs/req | peak RSS MB | vs bare Fastify | mcp-pure-http vs this |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'
  ]
  for (const workload of workloads(r)) {
    const ours = find(r, workload, 'ours')
    const bare = find(r, workload, 'bare')
    for (const target of ORDER) {
      const m = find(r, workload, target)
      if (m === undefined) continue
      const vsBare = bare === undefined || target === 'bare' ? '' : percentWithSpread(pairedRatios(m, bare, (x) => x.rps))
      const oursVs = ours === undefined || target === 'ours' ? '' : ratio(ours.rps / m.rps)
      rows.push(
        `| ${workload} | ${TARGETS[target]} | ${fmt(m.rps)} | ${fmt(m.p50Ms, 2)} | ${fmt(m.p99Ms, 2)} | ${fmt(m.cpuUsPerRequest, 1)} | ${m.redisUsPerRequest === undefined ? '' : fmt(m.redisUsPerRequest, 1)} | ${fmt(m.peakMb)} | ${vsBare} | ${oursVs} |`
      )
    }
  }
  return rows.join('\n')
}

/** A ratio as a percentage, the median of the launches with their range when there are several. */
function percentWithSpread(ratios: number[]): string {
  const pct = (x: number) => fmt(x * 100, 1)
  return ratios.length < 2 ? `${pct(median(ratios))}%` : `${pct(median(ratios))}% (${pct(Math.min(...ratios))}-${pct(Math.max(...ratios))})`
}

/** PASS/MISS lines of the targets. */
export function verdicts(r: Results): string {
  return checks(r)
    .map((c) => {
      const value = c.unit === 'x' ? ratio(c.value) : `${fmt(c.value, c.unit === '%' ? 1 : 1)} ${c.unit}`
      const limit = c.unit === 'x' ? ratio(c.limit) : `${c.limit} ${c.unit}`
      const byCpu = c.byCpu === undefined ? (c.rps === undefined ? '' : `; req/s ${ratio(c.rps)}`) : `; by CPU per request ${ratio(c.byCpu)}`
      const spread = c.spread === undefined ? '' : `, median of ${c.spread.launches} launches, ${ratio(c.spread.min)}-${ratio(c.spread.max)}`
      return `${c.pass ? 'PASS' : 'MISS'}  ${c.name}: ${value}${spread} (target ${c.op} ${limit}${byCpu})`
    })
    .join('\n')
}
