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
 * it decides a change of a few per cent that CPU time cannot in any number of launches we can afford.
 */

const exec = promisify(execFile)
// valgrind names the pipes callgrind_control talks through after $HOST, which startServer sets for
// the server: the control must look for the same name.
const control = (command: '-z' | '-d', pid: number) => exec('callgrind_control', [command, String(pid)], { env: { ...process.env, HOST: '127.0.0.1' } })

/** How much to send: before counting, and in each counted window. */
export interface InstructionOptions {
  /** Requests before counting (the JIT and the heap settle). */
  warm: number
  /** Requests in each counted window. */
  window: number
  windows: number
  connections: number
}

/** The total of a callgrind dump (its `summary:` line: every thread's instructions). */
export function callgrindTotal(dump: string): number {
  const m = /^summary:\s+(\d+)/m.exec(dump)
  if (m === null) throw new Error('a callgrind dump without a summary line')
  return Number(m[1])
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
): Promise<number[]> {
  const prefix = `cg-${spec.id}`
  const wrap = ['valgrind', '--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${join(dir, prefix)}.%p`]
  const server = await startServer({ ...spec, wrap })
  // The process callgrind counts, by the file it opened at its start: Debian's `valgrind` is a
  // script that starts valgrind.bin as its child, so the pid started is not the one counted.
  const pid = Number((await readdir(dir)).find((f) => f.startsWith(`${prefix}.`))!.slice(prefix.length + 1))
  try {
    const request = await requestFor(server.base)
    await h2load(server.base, request, { connections: o.connections, seconds: 0, requests: o.warm })
    const counts: number[] = []
    for (let w = 1; w <= o.windows; w++) {
      await control('-z', pid)
      const { requests } = await h2load(server.base, request, { connections: o.connections, seconds: 0, requests: o.window })
      await control('-d', pid)
      counts.push(Math.round(callgrindTotal(await dumpNumbered(dir, `${prefix}.${pid}.${w}`)) / requests))
    }
    return counts
  } finally {
    // Stopped before its wrapper, which would otherwise leave it running; it writes a last dump
    // as it exits, which takes a while under load.
    const deadline = Date.now() + 60_000
    for (let signal: NodeJS.Signals | 0 = 'SIGTERM'; Date.now() < deadline; signal = 0) {
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

/** The w-th dump, once callgrind has written it whole (`callgrind_control -d` returns as it starts). */
async function dumpNumbered(dir: string, name: string): Promise<string> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if ((await readdir(dir)).includes(name)) {
      const text = await readFile(join(dir, name), 'utf8')
      if (/^totals:/m.test(text)) return text
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`callgrind wrote no ${name} within 60 s (${(await readdir(dir)).join(', ')})`)
}
