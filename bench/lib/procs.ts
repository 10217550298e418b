import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { freePort } from './ports.js'

/** The core the servers run on, and the one h2load (and this runner) use. */
export const SERVER_CORE = 0
export const LOAD_CORE = 1

/**
 * How a measured process is started: pinned to `core`, and at a higher priority than whatever
 * else the machine runs (`nice -n -10`, which needs root; without it nice warns and runs the
 * command at the usual priority), so other work on a shared machine disturbs the numbers less.
 */
export function pinned(core: number, command: string, args: string[]): [string, string[]] {
  return ['nice', ['-n', '-10', 'taskset', '-c', String(core), command, ...args]]
}

export interface ServerSpec {
  /** Stable id in results: `ours`, `bare`, `sdk-v1`, `sdk-v2`... */
  id: string
  /** Node arguments: the script and any flags before it. */
  args: string[]
  env?: Record<string, string>
  /** A path answered once the server is up (any status). */
  readyPath: string
  /** For a server that takes its port as a flag (`--port`), not from `PORT`. */
  portFlag?: string
  /** A command Node runs under (valgrind's, say): `[command, ...its arguments]`, before Node's path. */
  wrap?: string[]
}

export interface Running {
  spec: ServerSpec
  base: string
  pid: number
  stop(): Promise<void>
}

// Servers still running when the runner exits (an error, Ctrl-C) are killed with it.
const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL')
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130))

/** Start a server pinned to {@link SERVER_CORE} on a fresh loopback port; resolves once it answers. */
export async function startServer(spec: ServerSpec): Promise<Running> {
  const port = await freePort()
  const node = spec.portFlag === undefined ? spec.args : [...spec.args, spec.portFlag, String(port)]
  const [command, args] = spec.wrap === undefined ? pinned(SERVER_CORE, process.execPath, node) : pinned(SERVER_CORE, spec.wrap[0]!, [...spec.wrap.slice(1), process.execPath, ...node])
  const child = spawn(command, args, {
    env: { ...process.env, ...spec.env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  live.add(child)
  child.once('exit', () => live.delete(child))
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)))
  const base = `http://127.0.0.1:${port}`
  await waitUntilUp(child, base + spec.readyPath, () => stderr)
  return { spec, base, pid: child.pid!, stop: () => stop(child) }
}

async function waitUntilUp(child: ChildProcess, url: string, stderr: () => string): Promise<void> {
  // Two minutes: Node under valgrind takes ~30 s to start on this machine.
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode} before answering ${url}:\n${stderr()}`)
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) })
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  child.kill('SIGKILL')
  throw new Error(`server did not answer ${url} within 120 s:\n${stderr()}`)
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000)
    child.once('exit', () => {
      clearTimeout(kill)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

const TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100

/**
 * CPU time a process has used so far (user + system, every thread: GC helpers too), in seconds.
 * Requests per CPU-second is the measure that holds on a machine shared with other work, where
 * req/s depends on how much of its core the server got.
 */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / TICKS
}

/**
 * Wait until none of `pids` is using the CPU (under `idle` of a core over a `windowMs` window),
 * at most `maxMs`; resolves with how long it waited. A server drowned by a run (the SDK servers
 * answer a 200-tool list in seconds, 32 at a time) keeps working through its backlog after h2load
 * has gone; without this, the next target's run shares the core with that backlog.
 */
export async function settle(pids: number[], { idle = 0.05, windowMs = 250, maxMs = 30_000 } = {}): Promise<number> {
  const start = Date.now()
  const total = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0)
  for (;;) {
    const before = total()
    await new Promise((resolve) => setTimeout(resolve, windowMs))
    if (total() - before <= (idle * windowMs) / 1000 || Date.now() - start >= maxMs) return Date.now() - start
  }
}

/** Resident memory now and its peak (VmHWM) so far, in MB, from /proc. */
export function memory(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 }
}

/**
 * A redis-server on a fresh loopback port, pinned with the servers (it is part of their side),
 * without persistence. Throws when redis-server is not installed.
 */
export async function startRedis(): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort()
  const [command, args] = pinned(SERVER_CORE, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'])
  const child = spawn(command, args, { stdio: 'ignore' })
  live.add(child)
  child.once('exit', () => live.delete(child))
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited ${child.exitCode} (is it installed? apt-get install redis-server)`)
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => ((socket.end(), resolve(true))))
      socket.once('error', () => resolve(false))
    })
    if (up) return { url: `redis://127.0.0.1:${port}`, pid: child.pid!, stop: () => stop(child) }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  child.kill('SIGKILL')
  throw new Error('redis-server did not answer within 10 s')
}

/**
 * The order round `round` visits `targets` in (rounds counted over all launches of a workload):
 * each round starts one further along, forwards for a cycle of `targets.length` rounds, then
 * backwards for one. Over a cycle every target goes first once; over two, each runs right after
 * each other one. (Reversing every other round of a rotation, as the bench did, cancels out with
 * two targets: ours ran first in every round of every launch.)
 * @example visitOrder(['ours', 'bare'], 1) // ['bare', 'ours']
 */
export function visitOrder<T>(targets: readonly T[], round: number): T[] {
  const n = targets.length
  const step = Math.floor(round / n) % 2 === 0 ? 1 : n - 1
  return targets.map((_, i) => targets[(round + i * step) % n]!)
}
