import { spawn } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import { parseSummary, percentiles } from './parse.js'
import { LOAD_CORE, pinned } from './procs.js'

/** One HTTP request shape, repeated by every h2load client. */
export interface RequestSpec {
  path: string
  /** A file holding the POST body (h2load `-d`); GET without it. */
  bodyFile?: string
  headers?: Record<string, string>
  /** The status every answer must have (default 200); any other fails the run. */
  status?: number
  /**
   * A file of full URIs, one a line, used in turn by every client (h2load `-i`) instead of `path`:
   * how one run spreads over many logical connections, since h2load sends the same headers always.
   */
  uriFile?: string
}

export interface LoadOptions {
  connections: number
  seconds: number
  /** Send exactly this many requests (h2load `-n`) instead of running for `seconds`. */
  requests?: number
  /** Requests per second per connection (h2load `--rps`); unset: as fast as the server answers. */
  rps?: number
  /** Where h2load writes one line per request, for the latency percentiles. */
  logFile?: string
}

export interface LoadResult {
  rps: number
  requests: number
  p50Ms: number
  p99Ms: number
  /** Response bytes (headers and body) per request. */
  bytesPerResponse: number
}

/**
 * Drive `url + spec.path` with h2load in HTTP/1.1 mode, pinned to the load core (see {@link pinned}). h2load prints
 * mean and sd only, so the percentiles come from its per-request log. Throws when any answer was
 * not `spec.status`, so a broken server never shows up as a fast one.
 */
export async function h2load(base: string, spec: RequestSpec, options: LoadOptions): Promise<LoadResult> {
  const args = ['--h1', '-c', String(options.connections), '-t', '1', ...(options.requests === undefined ? ['-D', String(options.seconds)] : ['-n', String(options.requests)])]
  if (options.rps !== undefined) args.push('--rps', String(options.rps))
  if (spec.bodyFile !== undefined) args.push('-d', spec.bodyFile)
  for (const [name, value] of Object.entries(spec.headers ?? {})) args.push('-H', `${name}: ${value}`)
  if (options.logFile !== undefined) {
    await rm(options.logFile, { force: true }) // h2load appends
    args.push('--log-file', options.logFile)
  }
  if (spec.uriFile !== undefined) args.push('-i', spec.uriFile)
  else args.push(base + spec.path)
  const out = await run(...pinned(LOAD_CORE, 'h2load', args))
  const summary = parseSummary(out)
  const expected = spec.status ?? 200
  const ok = summary.statusCounts[Math.floor(expected / 100)]!
  // A timed run's last answers may have their status counted and not be done when it stops: more
  // of the expected class than requests is no failure; one answer of another class is.
  const others = Object.values(summary.statusCounts).reduce((n, c) => n + c, 0) - ok
  if (summary.requests === 0 || ok < summary.requests || others > 0 || summary.failed > 0) {
    throw new Error(`h2load ${spec.path}: ${summary.requests} requests, ${ok} ${expected}-class, ${summary.failed} failed\n${out}`)
  }
  const latency = options.logFile === undefined ? { p50Ms: NaN, p99Ms: NaN } : percentiles(await readFile(options.logFile, 'utf8'))
  return { rps: summary.rps, requests: summary.requests, ...latency, bytesPerResponse: summary.bytes / summary.requests }
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}:\n${out}`))))
  })
}
