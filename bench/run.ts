/**
 * `npm run bench`: this project's server against bare Fastify and the official MCP SDK's stateless
 * servers, on loopback, servers pinned to one core and h2load to the other.
 *
 *   npm run bench                      full run, 3 launches per phase (about 2 hours on 2 cores): bench/results/latest.{json,svg}
 *   npm run bench -- --quick           short runs for iteration: bench/results/quick.{json,svg}
 *   npm run bench -- --only list,MRTR  only workloads (or phases) whose id contains one of these: partial.{json,svg}
 *   npm run bench -- --only "task: create (202, Redis store)"   a comma inside parentheses is part of the id
 *   npm run bench -- --only core --skip cluster   and not those whose id contains one of these
 *   npm run bench -- --only targeted --servers ours,bare --launches 5   the workloads with a target (issue 40), ours and bare only
 *   npm run bench -- --only capacity   Redis memory per connection, notification, task, replay record
 *   npm run bench -- --only functions  Redis CPU per store step, Redis Functions against scripts
 *   npm run bench -- --only roundtrips Redis round trips and commands per request of each Redis workload
 *   npm run bench -- --only ledger     task creation's Redis CPU on each master: one Redis, a Cluster
 *   npm run bench -- --soak 600        10-minute soak of the demo server at a steady rate: memory growth
 *   npm run bench -- --profile "tools/call echo" [--target bare]   CPU profile of a server under a workload
 *   npm run bench -- --report bench/results/latest.json   table, verdicts and the SVG again from a results file
 *   --connections N (default 32), --launches N (fresh launches per phase; default 3, quick 1), --reps N, --seconds N, --warm N (warm-up s; default 8, quick 2)
 */
import { execFileSync } from 'node:child_process'
import { cpus, loadavg } from 'node:os'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { h2load, type LoadResult, type RequestSpec } from './lib/h2load.js'
import { terms } from './lib/parse.js'
import { cpuSeconds, memory, settle, startRedis, startServer, visitOrder, type Running } from './lib/procs.js'
import { capacity, capacityTable } from './lib/capacity.js'
import { functionsBench, functionsTable } from './lib/functions.js'
import { ledgerSpread, ledgerTable } from './lib/ledger.js'
import { fairness } from './lib/fair.js'
import { profile } from './lib/profile.js'
import { roundTrips, roundTripTable } from './lib/roundtrips.js'
import { sealMicro } from './lib/seal-micro.js'
import { soak } from './lib/soak.js'
import { webhookBench } from './lib/webhooks.js'
import { telemetryBench, telemetryLine } from './lib/telemetry.js'
import { svg } from './chart.js'
import { RATIO_TARGETS, checks, median, table, verdicts, type Measurement, type Results } from './report.js'
import { Files } from './requests.js'
import { PENDING, phases, processOf, serverEnv, type Phase, type Workload } from './workloads.js'
import { startRedisCluster, type RedisCluster } from '../test/helpers/redis-cluster.js'

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const root = resolve(dist, '..')
const resultsDir = join(root, 'bench/results')

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    servers: { type: 'string' },
    skip: { type: 'string' },
    soak: { type: 'string' },
    profile: { type: 'string' },
    report: { type: 'string' },
    target: { type: 'string', default: 'ours' },
    connections: { type: 'string', default: '32' },
    launches: { type: 'string' },
    reps: { type: 'string' },
    seconds: { type: 'string' },
    warm: { type: 'string' }
  }
})

const quick = flags.quick
const settings = {
  connections: Number(flags.connections),
  // Many short runs, alternating, and the best of each: on a shared machine the best run is the
  // one least disturbed by other work, and alternation spreads the disturbance over every target.
  seconds: Number(flags.seconds ?? (quick ? 3 : 5)),
  reps: Number(flags.reps ?? (quick ? 2 : 3)),
  // Fresh launches of every server of a phase: a process's speed varies more from one launch to
  // the next than from one run to the next, so every ratio is the median of per-launch pairs.
  launches: Number(flags.launches ?? (quick ? 1 : 3)),
  // The SDK servers keep speeding up for 10-15 s (JIT of the per-request rebuild); ours and bare settle
  // sooner (`--warm`: seconds of warm-up for ours and bare).
  warmSeconds: Number(flags.warm ?? (quick ? 2 : 8)),
  warmSdkSeconds: quick ? 4 : 15
}
const only = flags.only === undefined ? undefined : terms(flags.only)
const skip = flags.skip === undefined ? [] : terms(flags.skip)
// `targeted`: the workloads that have a target (RATIO_TARGETS), each by its exact id.
const matches = (phase: Phase, w: Workload, o: string) =>
  o === 'targeted' ? RATIO_TARGETS[w.id] !== undefined : w.id.toLowerCase().includes(o) || phase.id.toLowerCase().includes(o)
// --servers: drive only these targets (the others' servers are not started).
const onlyServers = flags.servers?.split(',').map((s) => s.trim()).filter((s) => s !== '')
const wanted = (target: string) => onlyServers === undefined || onlyServers.includes(target)
const selected = (phase: Phase, w: Workload) =>
  (only === undefined || only.some((o) => matches(phase, w, o))) && !skip.some((o) => matches(phase, w, o))

const scratch = mkdtempSync(join(root, 'bench/.tmp-'))
const files = new Files(scratch)
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }))

if (flags.report !== undefined) {
  const results = JSON.parse(readFileSync(flags.report, 'utf8')) as Results
  writeFileSync(flags.report.replace(/\.json$/, '.svg'), svg(results) + '\n')
  console.log(`${table(results)}\n\n${verdicts(results)}`)
} else if (flags.soak !== undefined) {
  await soak(phases(dist)[0]!, Number(flags.soak), files, resultsDir)
} else if (flags.profile !== undefined) {
  await profile(phases(dist), flags.profile, flags.target, settings, files, join(root, 'bench/.profiles'))
} else {
  await benchmark()
}

async function benchmark(): Promise<void> {
  const results: Results = {
    meta: {
      date: new Date().toISOString(),
      mode: quick ? 'quick' : 'full',
      commit: git('rev-parse', '--short', 'HEAD'),
      node: process.version,
      h2load: execFileSync('h2load', ['--version']).toString().trim(),
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      connections: settings.connections,
      seconds: settings.seconds,
      reps: settings.reps,
      launches: settings.launches,
      pick: 'per launch: the best run (highest req/s) and the lowest CPU µs/req of each target; shown: the median over launches; ratios: the median of per-launch pairs'
    },
    measurements: [],
    peakRss: {},
    skipped: PENDING.map((p) => ({ workload: p.workload, reason: p.feature })),
    notes: []
  }
  console.log(
    `bench (${results.meta.mode}): ${settings.connections} connections, ${settings.launches} launch(es) per phase, ${settings.seconds} s x ${settings.reps} runs per target and launch, servers on core 0, h2load on core 1`
  )

  if (only === undefined || only.some((o) => 'seal'.includes(o))) {
    results.seal = sealMicro()
    const s = results.seal
    console.log(`seal + open one requestState: ${s.usPerSealOpen.toFixed(1)} µs (seal ${s.usPerSeal.toFixed(1)} µs, open ${s.usPerOpen.toFixed(1)} µs)`)
  }
  if (only === undefined || only.some((o) => 'webhooks'.includes(o))) {
    const redis = await startRedis()
    results.webhooks = await webhookBench(redis.url, quick ? 1000 : 5000).finally(() => redis.stop())
    const w = results.webhooks
    console.log(`webhook deliveries to a loopback receiver: ${w.memoryPerSec}/s (memory), ${w.redisPerSec}/s (Redis), ${w.messages} messages`)
  }
  if (only === undefined || only.some((o) => 'telemetry'.includes(o))) {
    // Issue 40's targets: /metrics alone within 1.1x of off; traces and /metrics within 1.1x of what the official SDK's floor adds.
    results.telemetry = await telemetryBench(dist, files, { seconds: settings.seconds, launches: Math.max(5, settings.launches), reps: settings.reps, connections: settings.connections, warmSeconds: settings.warmSeconds })
    console.log(telemetryLine(results.telemetry))
  }
  if (only === undefined || only.some((o) => 'capacity'.includes(o))) {
    // Deterministic too: Redis memory per connection, notification, task and replay record.
    results.capacity = await capacity(quick ? 10_000 : 100_000)
    console.log(`Redis memory per unit of state:\n${capacityTable(results.capacity)}`)
  }
  if (only === undefined || only.some((o) => 'functions'.includes(o))) {
    // Redis' CPU per step by Redis Functions against scripts (7.0: both ways on one server).
    results.functions = await functionsBench(quick ? 2000 : 8000, Math.max(5, settings.launches))
    console.log(`Redis Functions against scripts:\n${functionsTable(results.functions)}`)
  }
  if (only === undefined || only.some((o) => 'ledger'.includes(o))) {
    // Task creation's Redis CPU on each master: one Redis, and a Cluster with one ledger and in shards.
    results.ledger = await ledgerSpread(quick ? 5000 : 20_000, settings.launches)
    console.log(`Task creation over a Cluster's masters:\n${ledgerTable(results.ledger)}`)
  }
  if (only === undefined || only.some((o) => 'roundtrips'.includes(o))) {
    // Deterministic: Redis round trips and commands per request, through a counting proxy.
    results.roundTrips = await roundTrips(phases(dist), files, quick ? 50 : 200)
    console.log(`Redis round trips per request (one request at a time):\n${roundTripTable(results.roundTrips)}`)
  }
  // Only a full run of everything replaces latest.json; --only writes partial.json.
  const name = quick ? 'quick' : only === undefined && skip.length === 0 ? 'latest' : 'partial'
  mkdirSync(resultsDir, { recursive: true })
  // What the phases measured so far, after each: a run stopped midway (hours, for a full one) keeps them.
  const progress = join(resultsDir, `${name}.progress.json`)
  for (const phase of phases(dist)) {
    if (!phase.workloads.some((w) => selected(phase, w))) continue
    await runPhase(phase, results)
    writeFileSync(progress, JSON.stringify(results, null, 2) + '\n')
  }
  for (const s of results.skipped) console.log(`skipped: ${s.workload} (not built yet: ${s.reason})`)

  writeFileSync(join(resultsDir, `${name}.json`), JSON.stringify(results, null, 2) + '\n')
  writeFileSync(join(resultsDir, `${name}.svg`), svg(results) + '\n')
  rmSync(progress, { force: true })
  console.log(`\n${table(results)}\n`)
  console.log('Peak RSS per server process (VmHWM, MB):', Object.entries(results.peakRss).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', '))
  console.log(`\n${verdicts(results)}`)
  console.log(`\nwrote bench/results/${name}.json and bench/results/${name}.svg`)
  if (checks(results).some((c) => !c.pass)) console.log('some targets missed: `npm run bench -- --profile "tools/call echo"` shows where the time goes')
}

/**
 * A phase: `launches` times, for each selected workload start the phase's servers fresh, measure
 * that workload alone, note each server's peak RSS, stop them; then one measurement per workload
 * and target over the launches, and the phase's targets printed.
 *
 * One workload per process: what a server costs per request depends on what it served before. Bare
 * Fastify's echo cost 15 µs a request on a fresh process and 20-22 µs on one that had first answered
 * one request of each of the phase's four workloads (ours 16-18 either way), so a phase's workloads
 * measured in the same processes were measured against a ceiling made lower by its neighbours.
 */
async function runPhase(phase: Phase, results: Results): Promise<void> {
  const perLaunch = new Map<string, Run[][]>()
  for (let launch = 1; launch <= settings.launches; launch++) {
    if (settings.launches > 1) console.log(`[${phase.id}] launch ${launch}/${settings.launches}`)
    for (const workload of phase.workloads.filter((w) => selected(phase, w))) {
      const ok = await launchPhase(phase, workload, launch - 1, results, (target, runs) => {
        const key = `${workload.id}\u0000${target}`
        perLaunch.set(key, [...(perLaunch.get(key) ?? []), runs])
      })
      if (!ok) return
    }
  }
  const mine: Measurement[] = []
  for (const [key, launches] of perLaunch) {
    const [workload, target] = key.split('\u0000') as [string, string]
    const m = combine(workload, target, launches)
    if (m !== undefined) mine.push(m)
  }
  results.measurements.push(...mine)
  const text = verdicts({ ...results, measurements: mine, seal: undefined, soak: undefined })
  if (text !== '') console.log(`[${phase.id}] targets:\n${text}`)
}

/** One launch of a phase's servers for one workload; false when the phase cannot run here (no Redis). */
async function launchPhase(phase: Phase, workload: Workload, launch: number, results: Results, record: (target: string, runs: Run[]) => void): Promise<boolean> {
  // The servers and h2load need both cores: anything else running skews the numbers.
  const load = loadavg()[0]!
  if (load > 1.5) {
    const note = `load average ${load.toFixed(1)} before phase ${phase.id}: other processes compete for the 2 cores`
    results.notes.push(note)
    console.log(`  warning: ${note}`)
  }
  const running = new Map<string, Running>()
  let redis: Awaited<ReturnType<typeof startRedis>> | undefined
  // The cluster's six redis-server processes are not pinned: they share both cores with the rest.
  let cluster: RedisCluster | undefined
  try {
    if (phase.redis === true) {
      try {
        redis = await startRedis()
      } catch (err) {
        results.skipped.push({ workload: `phase ${phase.id}`, reason: (err as Error).message })
        return false
      }
    }
    if (phase.redisCluster === true) {
      try {
        cluster = await startRedisCluster()
      } catch (err) {
        results.skipped.push({ workload: `phase ${phase.id}`, reason: (err as Error).message })
        return false
      }
    }
    for (const spec of phase.servers) {
      if (onlyServers !== undefined && !onlyServers.some((t) => processOf(t) === spec.id)) continue
      const shared = { ...(redis === undefined ? {} : { MCP_REDIS_URL: redis.url }), ...(cluster === undefined ? {} : { MCP_REDIS_CLUSTER_NODES: cluster.seeds }) }
      const env = serverEnv(phase, spec, shared)
      running.set(spec.id, await startServer({ ...spec, ...(env === undefined ? {} : { env }) }))
    }
    const redisPids = [...(redis === undefined ? [] : [redis.pid]), ...(cluster?.nodes.map((n) => n.process.pid!) ?? [])]
    const pids = [...[...running.values()].map((s) => s.pid), ...redisPids]
    // A ratio to bare Fastify means something only if bare answers what ours answers: a workload
    // whose answers differ is not measured, and the run says why.
    const unfair = new Set<string>()
    const ours = running.get('ours')
    const bare = running.get('bare')
    if (ours !== undefined && bare !== undefined) {
      for (const { workload: id, differences } of await fairness({ ...phase, workloads: [workload] }, ours.base, bare.base, files)) {
        if (differences.length === 0) continue
        unfair.add(id)
        const reason = `bare does not answer what ours answers: ${differences.join('; ')}`
        if (!results.skipped.some((s) => s.workload === id && s.reason === reason)) results.skipped.push({ workload: id, reason })
        console.log(`  [${phase.id}] ${id}: not measured, ${reason}`)
      }
    }
    if (!unfair.has(workload.id)) {
      for (const [target, runs] of await measure(phase, workload, launch, running, pids, results, redis?.pid)) record(target, runs)
    }
    for (const [id, server] of running) {
      const key = `${id}@${phase.id}`
      results.peakRss[key] = Math.max(results.peakRss[key] ?? 0, round(memory(server.pid).peakMb))
    }
    return true
  } finally {
    await Promise.all([...running.values()].map((s) => s.stop()))
    await redis?.stop()
    await cluster?.stop()
  }
}

/**
 * One workload in launch `launch` (from 0): warm every target up, then `reps` rounds that each
 * visit every target in turn ({@link visitOrder}: each round, over the launches too, starts one
 * further along, every other cycle backwards; each run once the servers are idle), and keep each
 * target's best run. With the phase's one redis-server (`redisPid`),
 * its CPU per request too: only one target runs at a time, so what Redis spent was for that target.
 */
async function measure(phase: Phase, workload: Workload, launch: number, running: Map<string, Running>, pids: number[], results: Results, redisPid?: number): Promise<Map<string, Run[]>> {
  const targets = Object.keys(workload.requests).filter(wanted)
  const serverOf = (target: string) => running.get(processOf(target))!
  const specs = new Map<string, RequestSpec>()
  for (const target of targets) {
    const request = workload.requests[target]!
    specs.set(target, typeof request === 'function' ? await request(serverOf(target).base, files) : request)
  }
  const drive = (target: string, seconds: number, logFile?: string) =>
    h2load(serverOf(target).base, specs.get(target)!, { connections: settings.connections, seconds, ...(logFile === undefined ? {} : { logFile }) })
  const driveTimed = async (target: string, seconds: number, logFile: string): Promise<Run> => {
    // Every server of the phase idle first: the previous target may still be working off its backlog.
    const waited = await settle(pids)
    if (waited > 1000) console.log(`  (waited ${(waited / 1000).toFixed(1)} s for the servers to go idle)`)
    const pid = serverOf(target).pid
    const before = cpuSeconds(pid)
    const redisBefore = redisPid === undefined ? 0 : cpuSeconds(redisPid)
    const run = await drive(target, seconds, logFile)
    const cpuUsPerRequest = ((cpuSeconds(pid) - before) * 1e6) / run.requests
    if (redisPid === undefined) return { ...run, cpuUsPerRequest }
    return { ...run, cpuUsPerRequest, redisUsPerRequest: ((cpuSeconds(redisPid) - redisBefore) * 1e6) / run.requests }
  }

  // Warm-up answers are not counted; a server too slow to finish one in time is fine here.
  for (const target of targets) await drive(target, isSdk(target) ? settings.warmSdkSeconds : settings.warmSeconds).catch(() => undefined)
  const runs = new Map<string, Run[]>(targets.map((t) => [t, []]))
  for (let rep = 0; rep < settings.reps; rep++) {
    // Each round starts with another target (over launches too), every other cycle backwards.
    const order = visitOrder(targets, launch * settings.reps + rep)
    for (const target of order) {
      const label = `[${phase.id}] ${workload.id} · ${target} · run ${rep + 1}/${settings.reps}`
      // The SDK servers answer a 200-tool list in seconds: give them time to finish some.
      const seconds = isSdk(target) ? Math.max(settings.seconds, 10) : settings.seconds
      try {
        const run = await driveTimed(target, seconds, join(scratch, 'h2load.log'))
        runs.get(target)!.push(run)
        const redisCpu = run.redisUsPerRequest === undefined ? '' : `, Redis ${run.redisUsPerRequest.toFixed(1)} µs CPU/req`
        console.log(
          `  ${label}: ${run.rps.toFixed(0)} req/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms, ${run.cpuUsPerRequest.toFixed(1)} µs CPU/req${redisCpu}`
        )
      } catch (err) {
        results.notes.push(`${label}: ${(err as Error).message.split('\n')[0]}`)
        console.log(`  ${label}: FAILED ${(err as Error).message.split('\n')[0]}`)
      }
    }
  }
  for (const [target, all] of runs) {
    // Memory right after the workload, kept with its runs.
    const mem = memory(serverOf(target).pid)
    for (const r of all) Object.assign(r, { rssMb: round(mem.rssMb), peakMb: round(mem.peakMb) })
  }
  return runs
}

/**
 * One workload and target over the launches: per launch, its best run (highest req/s) and lowest
 * CPU per request; shown, the median of those over the launches.
 */
function combine(workload: string, target: string, launches: Run[][]): Measurement | undefined {
  const bests = launches.filter((l) => l.length > 0).map((all) => ({ best: all.reduce((a, b) => (b.rps > a.rps ? b : a)), all }))
  if (bests.length === 0) return undefined
  const perLaunch = bests.map(({ best, all }): NonNullable<Measurement['launches']>[number] => {
    // The least CPU a run spent per request: the run least disturbed by other work.
    const launch = { rps: best.rps, p50Ms: best.p50Ms, p99Ms: best.p99Ms, cpuUsPerRequest: round(Math.min(...all.map((r) => r.cpuUsPerRequest))) }
    const redis = all.flatMap((r) => (r.redisUsPerRequest === undefined ? [] : [r.redisUsPerRequest]))
    return redis.length === 0 ? launch : { ...launch, redisUsPerRequest: round(Math.min(...redis)) }
  })
  const redis = perLaunch.flatMap((l) => (l.redisUsPerRequest === undefined ? [] : [l.redisUsPerRequest]))
  const last = bests.at(-1)!.best
  return {
    workload,
    target,
    rps: median(perLaunch.map((l) => l.rps)),
    p50Ms: median(perLaunch.map((l) => l.p50Ms)),
    p99Ms: median(perLaunch.map((l) => l.p99Ms)),
    cpuUsPerRequest: median(perLaunch.map((l) => l.cpuUsPerRequest)),
    ...(redis.length === 0 ? {} : { redisUsPerRequest: median(redis) }),
    bytesPerResponse: Math.round(last.bytesPerResponse),
    rssMb: last.rssMb ?? NaN,
    peakMb: Math.max(...bests.map((b) => b.best.peakMb ?? NaN)),
    launches: perLaunch,
    runs: bests.flatMap(({ all }) => all.map((r) => ({ rps: r.rps, p50Ms: r.p50Ms, p99Ms: r.p99Ms, cpuUsPerRequest: round(r.cpuUsPerRequest) })))
  }
}

type Run = LoadResult & { cpuUsPerRequest: number; redisUsPerRequest?: number; rssMb?: number; peakMb?: number }

function isSdk(target: string): boolean {
  return target.startsWith('sdk')
}

function round(n: number): number {
  return Math.round(n * 10) / 10
}

function git(...args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim()
  } catch {
    return 'unknown'
  }
}
