import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { Gateway, type GatewayOptions } from '../../src/gateway/gateway.js'
import { MemoryRelay, type RoundRelay } from '../../src/gateway/relay.js'
import type { UpstreamSpec } from '../../src/gateway/upstream.js'
import { buildServer } from '../../src/server.js'
import { MemoryStore } from '../../src/store/memory.js'
import type { Store } from '../../src/store/types.js'
import { EVERYTHING, FILESYSTEM } from '../tools/paths.js'
import { freePort } from './redis-server.js'

export { EVERYTHING, FILESYSTEM }

export const GATEWAY_BIN = fileURLToPath(new URL('../../dist/bin/mcp-pure-http.js', import.meta.url))

/** server-everything over stdio, as `mcp-pure-http gateway -- node .../index.js stdio` runs it. */
export const everythingStdio: UpstreamSpec = { command: process.execPath, args: [EVERYTHING, 'stdio'] }

const quiet = { debug() {}, info() {}, warn() {}, error() {} }

export interface Served {
  app: FastifyInstance
  gw: Gateway
  store: Store
}

/** A gateway to `spec` in this process, served by an app (inject), both closed when the test ends. */
export async function serveUpstream(
  t: Test,
  spec: UpstreamSpec,
  options: Partial<GatewayOptions> & { store?: Store; relay?: RoundRelay } = {}
): Promise<Served> {
  const gw = await Gateway.start({
    name: 'upstream',
    spec,
    log: quiet,
    server: {},
    relay: options.relay ?? new MemoryRelay(),
    instance: `test-${Math.random().toString(36).slice(2)}`,
    ...options
  })
  const store = options.store ?? new MemoryStore()
  const app = await buildServer({ logger: false, mcp: gw.mcp, store: gw.wrapStore(store) })
  t.teardown(async () => {
    await app.close()
    await gw.close()
  })
  await app.ready()
  return { app, gw, store }
}

/** server-everything in its Streamable HTTP mode on a free port; stopped when the test ends. */
export async function everythingHttp(t: Test): Promise<{ url: string; process: ChildProcess }> {
  const port = await freePort()
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  })
  let out = ''
  child.stderr!.on('data', (d: Buffer) => (out += String(d)))
  while (!out.includes('listening on port')) {
    if (child.exitCode !== null) throw new Error(`server-everything exited: ${out}`)
    await once(child.stderr!, 'data')
  }
  return { url: `http://127.0.0.1:${port}/mcp`, process: child }
}

/**
 * server-everything in its HTTP+SSE mode (the 2024-11-05 transport: GET /sse, POST /message) on a
 * free port, or on `port` to start it again where it was; stopped when the test ends.
 */
export async function everythingSse(t: Test, port?: number): Promise<{ url: string; port: number; process: ChildProcess }> {
  port ??= await freePort()
  const child = spawn(process.execPath, [EVERYTHING, 'sse'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  })
  let out = ''
  child.stderr!.on('data', (d: Buffer) => (out += String(d)))
  while (!out.includes('Server is running on port')) {
    if (child.exitCode !== null) throw new Error(`server-everything exited: ${out}`)
    await Promise.race([once(child.stderr!, 'data'), once(child, 'exit')])
  }
  return { url: `http://127.0.0.1:${port}/sse`, port, process: child }
}

/** A 2026-07-28 request's `_meta` declaring client capabilities. */
export const caps = (c: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/clientCapabilities': c,
  ...extra
})

/** Wait until `check` holds, polling (the tests wait for an event, not for a while), for up to `seconds`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, seconds = 10): Promise<void> {
  for (let i = 0; i < seconds * 100; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Take and acknowledge the connection's current group of notifications. */
export async function drain(app: FastifyInstance, headers: Record<string, string> = {}): Promise<{ method: string; params?: Record<string, unknown> }[]> {
  const got = await app.inject({ url: '/notifications', headers })
  const group = got.headers['mcp-message-group']
  if (group !== undefined) await app.inject({ method: 'POST', url: '/notifications', headers: { ...headers, 'mcp-message-group': group as string } })
  return got.json()
}

/**
 * An upstream called directly, as a client of it would without the gateway: the SDK's `Client` over
 * stdio (a child of its own); closed when the test ends. What it answers is what the gateway must.
 */
export async function direct(t: Test, spec: { command: string; args?: string[]; env?: Record<string, string> } = everythingStdio as { command: string; args: string[] }) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js')
  const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/sdk/client/stdio.js')
  const client = new Client({ name: 'direct', version: '1' }, { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} } })
  // The environment a gateway gives its child: the SDK's default plus the spec's.
  const env = { ...getDefaultEnvironment(), ...spec.env }
  const transport = new StdioClientTransport({ command: spec.command, args: spec.args ?? [], env, stderr: 'ignore' })
  await client.connect(transport)
  t.teardown(() => client.close())
  // The answers as they came on the pipe: the SDK's own parse (zod) puts an object's known keys
  // first (a resource's `name` before its `uri`, `$schema` after `type`), so "the same bytes" is
  // judged on what the upstream sent, not on what the SDK made of it.
  let answer: { result?: Record<string, unknown>; error?: { code: number; message: string } } = {}
  const onmessage = transport.onmessage!
  transport.onmessage = (message) => {
    if ('id' in message && ('result' in message || 'error' in message)) answer = message as typeof answer
    onmessage(message)
  }
  /** What answered `request` (one at a time), as sent: its result, or `{ error: { code, message } }`. */
  const wire = async (request: () => Promise<unknown>): Promise<Record<string, unknown>> => {
    answer = {}
    await request().catch(() => undefined)
    return answer.error === undefined ? answer.result! : { error: { code: answer.error.code, message: answer.error.message } }
  }
  /** A tools/call: its result, or the JSON-RPC error it answered ({ code, message }), as sent. */
  const callTool = (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => wire(() => client.callTool({ name, arguments: args }))
  return { client, callTool, wire }
}
