import { execFile } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { h2load, type RequestSpec } from './h2load.js'
import { startServer, type ServerSpec } from './procs.js'

/**
 * Instructions per request, counted by valgrind's callgrind: the number a process runs does not
 * depend on what else the machine does, where its CPU time moves 10-20% between launches here.
 * It is not the target's measure (CPU time is: memory stalls cost time and no instructions), but
 * it decides a change of ~5% that CPU time cannot in any number of launches we can afford (below
 * that, launches of the same build differ: the JIT's decisions, most likely; see bench/README.md).
 *
 * Counted per thread (`--separate-threads=yes`): the main thread, which serves the requests, and
 * every thread together. V8's worker threads (concurrent marking and sweeping, the optimizing
 * compiler) run when the heap and the JIT say so, and under callgrind a process runs ~50x slower,
 * so their share of a window is lumpy: the demo's echo, three windows of 10,000 requests, counted
 * 142k/112k/111k instructions a request in all threads and 115k/111k/110k in the main thread.
 */

const exec = promisify(execFile)
// valgrind names the pipes callgrind_control talks through after $HOST, which startServer sets for
// the server: the control must look for the same name.
const control = (command: '-z' | '-d' | '-i', pid: number, ...rest: string[]) =>
  exec('callgrind_control', [command, ...rest, String(pid)], { env: { ...process.env, HOST: '127.0.0.1' } })

/** How much to send: before counting, and in each counted window. */
export interface InstructionOptions {
  /** Requests before counting (the JIT and the heap settle). */
  warm: number
  /** Requests in each counted window. */
  window: number
  windows: number
  connections: number
  /**
   * Also simulate the caches (callgrind's `--cache-sim=yes`: first-level instruction and data
   * misses, the host's cache sizes). A start-up under the simulation outlasts Fastify's plugin
   * timeout, so the process runs uninstrumented (`--instr-atstart=no`) until the warm-up has been
   * sent, then is instrumented and warmed again briefly before counting.
   */
  cache?: boolean
}

/** Instructions per request of one counted window: the main thread's, and every thread's. */
export interface WindowCount {
  main: number
  all: number
  /** With {@link InstructionOptions.cache}: the main thread's first-level cache misses a request. */
  misses?: CacheMisses
}

/** First-level cache misses a request: instruction fetches, data reads, data writes. */
export interface CacheMisses {
  i1: number
  d1Read: number
  d1Write: number
}

/** The total of a callgrind dump (its `summary:` line: with separate threads, that thread's instructions). */
export function callgrindTotal(dump: string): number {
  const m = /^summary:\s+(\d+)/m.exec(dump)
  if (m === null) throw new Error('a callgrind dump without a summary line')
  return Number(m[1])
}

/** A dump's `summary:` line by event name (its `events:` line), e.g. `Ir`, `I1mr`, `D1mr`, `D1mw`. */
export function callgrindEvents(dump: string): Record<string, number> {
  const names = /^events:\s*(.+)$/m.exec(dump)?.[1]?.trim().split(/\s+/)
  const values = /^summary:\s*(.+)$/m.exec(dump)?.[1]?.trim().split(/\s+/)
  if (names === undefined || values === undefined) throw new Error('a callgrind dump without its events and summary lines')
  // A trailing event that counted nothing may be left off the summary.
  return Object.fromEntries(names.map((name, i) => [name, Number(values[i] ?? 0)]))
}

/**
 * The pid of the process callgrind counts, from the names of the files in its output directory
 * (`<prefix>.<pid>`, then `.<dump>-<thread>`).
 */
export function countedPid(names: readonly string[], prefix: string): number {
  const name = names.find((f) => f.startsWith(`${prefix}.`))
  const pid = name === undefined ? NaN : Number(name.slice(prefix.length + 1).split(/\D/)[0])
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no callgrind output named ${prefix}.<pid> among ${names.join(', ')}`)
  return pid
}

/**
 * Start `spec` under callgrind, warm it with `request`, then count each window's instructions
 * (the counters zeroed before it and dumped after, `callgrind_control -z` and `-d`): instructions
 * per request of each window. Counting starts at the process's start, so the warm-up is left out
 * by the zeroing, not by the options.
 */
export async function instructionsPerRequest(
  spec: ServerSpec,
  requestFor: (base: string) => Promise<RequestSpec>,
  dir: string,
  o: InstructionOptions
): Promise<WindowCount[]> {
  const prefix = `cg-${spec.id}`
  const cache = o.cache === true ? ['--cache-sim=yes', '--instr-atstart=no'] : []
  const wrap = ['valgrind', '--tool=callgrind', '--smc-check=all-non-file', '--separate-threads=yes', ...cache, `--callgrind-out-file=${join(dir, prefix)}.%p`]
  const server = await startServer({ ...spec, wrap })
  let pid: number | undefined
  try {
    // The process callgrind counts, by the file it opened at its start: Debian's `valgrind` is a
    // script that starts valgrind.bin as its child, so the pid started is not the one counted.
    pid = countedPid(await readdir(dir), prefix)
    const request = await requestFor(server.base)
    await h2load(server.base, request, { connections: o.connections, seconds: 0, requests: o.warm })
    if (o.cache === true) {
      // Instrumenting drops the translations valgrind made so far: a little more warm-up under it.
      await control('-i', pid, 'on')
      await h2load(server.base, request, { connections: o.connections, seconds: 0, requests: Math.min(o.warm, 2000) })
    }
    const counts: WindowCount[] = []
    for (let w = 1; w <= o.windows; w++) {
      await control('-z', pid)
      const { requests } = await h2load(server.base, request, { connections: o.connections, seconds: 0, requests: o.window })
      await control('-d', pid)
      const dumps = await dumpNumbered(dir, `${prefix}.${pid}.${w}`)
      const threads = dumps.map(callgrindTotal)
      const count: WindowCount = { main: Math.round(threads[0]! / requests), all: Math.round(threads.reduce((a, b) => a + b, 0) / requests) }
      if (o.cache === true) {
        const e = callgrindEvents(dumps[0]!)
        count.misses = { i1: e.I1mr! / requests, d1Read: e.D1mr! / requests, d1Write: e.D1mw! / requests }
      }
      counts.push(count)
    }
    return counts
  } finally {
    // Stopped before its wrapper, which would otherwise leave it running; it writes a last dump
    // as it exits, which takes a while under load.
    const deadline = Date.now() + 60_000
    for (let signal: NodeJS.Signals | 0 = 'SIGTERM'; pid !== undefined && Date.now() < deadline; signal = 0) {
      try {
        process.kill(pid, signal)
      } catch {
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await server.stop()
  }
}

/**
 * The w-th dump, a file a thread (`<name>-01` the main thread's, first), once callgrind has written
 * them all (`callgrind_control -d` returns as it starts): every file whole, and no new one since the
 * last look.
 */
async function dumpNumbered(dir: string, name: string): Promise<string[]> {
  const deadline = Date.now() + 60_000
  let seen = ''
  while (Date.now() < deadline) {
    const names = (await readdir(dir)).filter((f) => f.startsWith(`${name}-`)).sort()
    const texts = await Promise.all(names.map((f) => readFile(join(dir, f), 'utf8')))
    if (names[0] === `${name}-01` && texts.every((text) => /^totals:/m.test(text))) {
      if (names.join() === seen) return texts
      seen = names.join()
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`callgrind wrote no ${name}-01 within 60 s (${(await readdir(dir)).join(', ')})`)
}
