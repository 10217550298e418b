/**
 * The gateway phase: `tools/call echo` through `mcp-pure-http gateway` (server-everything over
 * stdio behind it: its REST route and its `/mcp`) against the same server-everything called
 * directly (the official SDK's client over stdio, in this process), against its own Streamable
 * HTTP transport, and against supergateway 4 (`--stateful`, Streamable HTTP in front of the same
 * stdio server), in one run, with the CPU per call each side spends and what the gateway adds.
 *
 *   node dist/bench/lib/gateway.js [--seconds 5] [--reps 3]   (after `npm run build`)
 *
 * Or from bench/run.ts: `results.gateway = await gatewayBench(dist, files, settings)`.
 *
 * server-everything's Streamable HTTP mode is stateful: one session, and the SDK's transport maps a
 * response to its stream by JSON-RPC id, so concurrent calls with h2load's one fixed body would
 * cross (supergateway's stateful mode likewise). Those targets are therefore driven by one client
 * in series (the cost of a call, not the ceiling); the gateway, which numbers its own upstream
 * requests, and the direct client are also driven by 32.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { h2load, type LoadResult, type RequestSpec } from './h2load.js'
import { cpuSeconds, settle, startServer, type Running } from './procs.js'
import { directBench } from './direct.js'

export interface GatewayRow {
  target: string
  connections: number
  rps: number
  p50Ms: number
  p99Ms: number
  /** CPU µs per call of the process answering HTTP (the gateway, or server-everything over HTTP). */
  frontCpuUs: number
  /** CPU µs per call of the stdio child behind the gateway (0 for the direct target). */
  upstreamCpuUs: number
}

export interface GatewayBench {
  rows: GatewayRow[]
  /** Gateway CPU µs per call (its own process, one client): what putting it in front adds. */
  addedCpuUs: number
}

interface Settings {
  seconds: number
  reps: number
}

const echo = { message: 'hello' }

export async function gatewayBench(dist: string, settings: Settings): Promise<GatewayBench> {
  const root = resolve(dist, '..')
  const tools = join(root, 'test/tools/node_modules')
  const everything = join(tools, '@modelcontextprotocol/server-everything/dist/index.js')
  const scratch = mkdtempSync(join(tmpdir(), 'gw-bench-'))
  const servers: Running[] = []
  try {
    const gateway = await startServer({
      id: 'gateway',
      args: [join(dist, 'bin/mcp-pure-http.js'), 'gateway', '--', process.execPath, everything, 'stdio'],
      env: { LOG_LEVEL: 'warn', MCP_RATE_LIMIT_MAX: '0' },
      readyPath: '/health'
    })
    servers.push(gateway)
    const child = Number(execFileSync('pgrep', ['-P', String(gateway.pid)], { encoding: 'utf8' }).trim().split('\n')[0])
    const direct = await startServer({ id: 'everything-http', args: [everything, 'streamableHttp'], readyPath: '/mcp' })
    servers.push(direct)
    const session = await openSession(direct.base)
    const superGateway = await startServer({
      id: 'supergateway',
      args: [supergateway(root), '--stdio', `${process.execPath} ${everything} stdio`, '--outputTransport', 'streamableHttp', '--stateful', '--logLevel', 'none'],
      portFlag: '--port',
      readyPath: '/mcp'
    })
    servers.push(superGateway)
    // Its stateful mode starts the stdio server for the session, so after it.
    const superSession = await openSession(superGateway.base)
    const superChild = descendants(superGateway.pid)

    const pureBody = join(scratch, 'pure.json')
    writeFileSync(pureBody, JSON.stringify({ arguments: echo }))
    const rpcBody = join(scratch, 'rpc.json')
    writeFileSync(rpcBody, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: echo } }))
    const targets: { target: string; connections: number; run: Running; pids: number[]; spec: RequestSpec }[] = [
      { target: 'gateway (Pure HTTP -> stdio)', connections: 1, run: gateway, pids: [gateway.pid, child], spec: { path: '/tools/echo/calls', bodyFile: pureBody, headers: { 'content-type': 'application/json' } } },
      {
        target: 'server-everything Streamable HTTP',
        connections: 1,
        run: direct,
        pids: [direct.pid],
        spec: {
          path: '/mcp',
          bodyFile: rpcBody,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }
        }
      },
      {
        target: 'supergateway --stateful (Streamable HTTP -> stdio)',
        connections: 1,
        run: superGateway,
        pids: [superGateway.pid, ...superChild],
        spec: {
          path: '/mcp',
          bodyFile: rpcBody,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': superSession, 'mcp-protocol-version': '2025-06-18' }
        }
      },
      { target: 'gateway (/mcp -> stdio)', connections: 1, run: gateway, pids: [gateway.pid, child], spec: { path: '/mcp', bodyFile: rpcBody, headers: RPC_HEADERS } },
      { target: 'gateway (Pure HTTP -> stdio)', connections: 32, run: gateway, pids: [gateway.pid, child], spec: { path: '/tools/echo/calls', bodyFile: pureBody, headers: { 'content-type': 'application/json' } } },
      { target: 'gateway (/mcp -> stdio)', connections: 32, run: gateway, pids: [gateway.pid, child], spec: { path: '/mcp', bodyFile: rpcBody, headers: RPC_HEADERS } }
    ]
    const rows: GatewayRow[] = []
    // Warm up each target, then alternate: the best run of each counts (as bench/run does).
    for (const t of targets) await h2load(t.run.base, t.spec, { connections: t.connections, seconds: 2 })
    const best = new Map<number, GatewayRow>()
    for (let rep = 0; rep < settings.reps; rep++) {
      for (const [i, t] of targets.entries()) {
        await settle(t.pids)
        const before = t.pids.map(cpuSeconds)
        const load: LoadResult = await h2load(t.run.base, t.spec, { connections: t.connections, seconds: settings.seconds, logFile: join(scratch, 'log') })
        const used = t.pids.map((pid, j) => ((cpuSeconds(pid) - before[j]!) * 1e6) / load.requests)
        const row = { target: t.target, connections: t.connections, rps: load.rps, p50Ms: load.p50Ms, p99Ms: load.p99Ms, frontCpuUs: used[0]!, upstreamCpuUs: used.slice(1).reduce((n, u) => n + u, 0) }
        if ((best.get(i)?.rps ?? -1) < row.rps) best.set(i, row)
      }
    }
    for (let i = 0; i < targets.length; i++) rows.push(best.get(i)!)
    // The upstream called directly, as its own clients do: no HTTP, one process less.
    for (const connections of [1, 32]) rows.push(await directBench(everything, connections, settings))
    return { rows, addedCpuUs: rows[0]!.frontCpuUs }
  } finally {
    for (const s of servers) await s.stop()
    rmSync(scratch, { recursive: true, force: true })
  }
}

// The peer issue #41 compares with; the bench's alone, so not a test tool every `npm test` installs.
const SUPERGATEWAY = 'supergateway@4.0.0'

/** supergateway's program, installed under bench/.tools (not tracked) the first time it is needed. */
function supergateway(root: string): string {
  const prefix = join(root, 'bench/.tools')
  const program = join(prefix, 'node_modules/supergateway/dist/index.js')
  if (!existsSync(program)) {
    console.error(`installing ${SUPERGATEWAY} into bench/.tools for the comparison...`)
    execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, SUPERGATEWAY], { stdio: ['ignore', 'ignore', 'inherit'] })
  }
  return program
}

const RPC_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' }

/** Every process below `pid` (supergateway runs its stdio server through a shell). */
function descendants(pid: number): number[] {
  let children: number[] = []
  try {
    children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim().split('\n').map(Number)
  } catch {
    return []
  }
  return children.flatMap((c) => [c, ...descendants(c)])
}

/** initialize and notifications/initialized on the stateful upstream: its session id. */
async function openSession(base: string): Promise<string> {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const init = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } })
  })
  const session = init.headers.get('mcp-session-id')
  await init.text()
  if (session === null) throw new Error(`server-everything gave no session (${init.status})`)
  const done = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })
  })
  await done.text()
  return session
}

export function gatewayTable(b: GatewayBench): string {
  const lines = [
    '| target | connections | req/s | p50 ms | p99 ms | CPU µs/call (HTTP side, or the direct client) | CPU µs/call (stdio child) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...b.rows.map((r) => `| ${r.target} | ${r.connections} | ${Math.round(r.rps)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.frontCpuUs.toFixed(1)} | ${r.upstreamCpuUs.toFixed(1)} |`)
  ]
  return `${lines.join('\n')}\n\nThe gateway adds ${b.addedCpuUs.toFixed(1)} µs of CPU per call (its own process, one client in series).`
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, reps: { type: 'string', default: '3' } } })
  const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
  console.log(gatewayTable(await gatewayBench(dist, { seconds: Number(values.seconds), reps: Number(values.reps) })))
}
