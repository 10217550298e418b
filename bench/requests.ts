import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { RequestSpec } from './lib/h2load.js'

/**
 * The requests of the workloads, per target: this project's and bare Fastify's routes, and the
 * SDK servers' JSON-RPC over Streamable HTTP (v2's createMcpHandler with the 2026-07-28 envelope).
 */

/** A target's request, or how to build it from the running server (a 304 needs the ETag first). */
export type Request = RequestSpec | ((base: string, files: Files) => Promise<RequestSpec>)

/** A workload's request per target. */
export type Requests = Partial<Record<string, Request>>

/** Writes request bodies into the run's scratch folder and names them for h2load `-d`. */
export class Files {
  #n = 0
  constructor(readonly dir: string) {}
  body(value: unknown): string {
    const file = join(this.dir, `body-${++this.#n}.json`)
    writeFileSync(file, JSON.stringify(value))
    return file
  }

  /** A URI list for h2load `-i`, one full URI a line. */
  uris(list: readonly string[]): string {
    const file = join(this.dir, `uris-${++this.#n}.txt`)
    writeFileSync(file, list.join('\n') + '\n')
    return file
  }
}

const JSON_HEADERS = { 'content-type': 'application/json' }
const RPC_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'h2load', version: '1' }
}
const ELICITING = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } }
export const TEXT = 'hello world'

/** `tools/call` of `name` on every target that has the tool. */
export function callTool(name: string, args: Record<string, unknown>, targets: readonly string[]): Requests {
  const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }
  const all: Requests = {
    ours: (_b, f) => Promise.resolve({ path: `/tools/${name}/calls`, bodyFile: f.body({ arguments: args }), headers: JSON_HEADERS }),
    bare: (_b, f) => Promise.resolve({ path: `/tools/${name}/calls`, bodyFile: f.body({ arguments: args }), headers: JSON_HEADERS }),
    'sdk-v1': (_b, f) => Promise.resolve({ path: '/mcp', bodyFile: f.body(rpc), headers: RPC_HEADERS }),
    'sdk-v2': (_b, f) => Promise.resolve({ path: '/mcp', bodyFile: f.body(rpc), headers: RPC_HEADERS }),
    'sdk-v2-modern': (_b, f) =>
      Promise.resolve({
        path: '/mcp-modern',
        bodyFile: f.body({ ...rpc, params: { ...rpc.params, _meta: MODERN_META } }),
        headers: { ...RPC_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name }
      })
  }
  return Object.fromEntries(targets.map((t) => [t, all[t]]))
}

export function listTools(targets: readonly string[]): Requests {
  const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
  const all: Requests = {
    ours: { path: '/tools' },
    bare: { path: '/tools' },
    'sdk-v1': (_b, f) => Promise.resolve({ path: '/mcp', bodyFile: f.body(rpc), headers: RPC_HEADERS }),
    'sdk-v2': (_b, f) => Promise.resolve({ path: '/mcp', bodyFile: f.body(rpc), headers: RPC_HEADERS }),
    'sdk-v2-modern': (_b, f) =>
      Promise.resolve({
        path: '/mcp-modern',
        bodyFile: f.body({ ...rpc, params: { _meta: MODERN_META } }),
        headers: { ...RPC_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }
      })
  }
  return Object.fromEntries(targets.map((t) => [t, all[t]]))
}

/** `GET /tools` revalidated: `If-None-Match` with the ETag the server gave first. */
export const revalidate: Request = async (base) => {
  const res = await fetch(base + '/tools')
  const etag = res.headers.get('etag')
  if (etag === null) throw new Error(`${base}/tools sent no ETag`)
  return { path: '/tools', headers: { 'if-none-match': etag }, status: 304 }
}

// The demo's update_work_item (SEP-2322's example): round 1 asks for a resolution; round 2
// answers it with round 1's sealed requestState, which stays valid for MCP_STATE_TTL_MS, so the
// same round-2 request can be replayed for the whole measurement.
const WORK_ITEM = { workItemId: 4242, fields: { 'System.State': 'Resolved' } }
const round1 = { _meta: ELICITING, arguments: WORK_ITEM }
export const mrtrRound1: Request = async (_base, files) => ({ path: '/tools/update_work_item/calls', bodyFile: files.body(round1), headers: JSON_HEADERS })
export const mrtrRound2: Request = async (base, files) => {
  const res = await fetch(base + '/tools/update_work_item/calls', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(round1) })
  const first = (await res.json()) as { resultType?: string; requestState?: string }
  if (first.resultType !== 'input_required' || first.requestState === undefined) throw new Error(`round 1 did not ask: ${JSON.stringify(first)}`)
  const answer = { ...round1, requestState: first.requestState, inputResponses: { resolution: { action: 'accept', content: { resolution: 'Fixed' } } } }
  return { path: '/tools/update_work_item/calls', bodyFile: files.body(answer), headers: JSON_HEADERS }
}

// Tasks: a call that declares the Tasks extension gets 202 and a task (kept 1 s, the least, so
// that thousands a second stay under the store's maxTasks); polling reads a finished one.
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
const taskCall = { _meta: TASKS, arguments: {}, task: { ttl: 1000 } }
// tasks/get declares the extension too (in Mcp-Meta), as the extension requires; bare reads it as well.
const DECLARED = { 'mcp-meta': JSON.stringify(TASKS) }
export const createTask: Request = async (_base, files) => ({ path: '/tools/bench_task/calls', bodyFile: files.body(taskCall), headers: JSON_HEADERS, status: 202 })
export const pollTask: Request = async (base) => {
  // Kept for the default hour: the same finished task is read for the whole measurement.
  const res = await fetch(base + '/tools/bench_task/calls', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ ...taskCall, task: {} }) })
  const { taskId } = (await res.json()) as { taskId?: string }
  if (res.status !== 202 || taskId === undefined) throw new Error(`no task: ${res.status}`)
  for (let i = 0; i < 50; i++) {
    const { status } = (await (await fetch(`${base}/tasks/${encodeURIComponent(taskId)}`, { headers: DECLARED })).json()) as { status?: string }
    if (status === 'completed') return { path: `/tasks/${encodeURIComponent(taskId)}`, headers: DECLARED }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`task ${taskId} did not complete`)
}

/**
 * A request spread over `count` logical connections (the bench servers' `c` query parameter): every
 * connection makes the request once first (so each has polled, and holds whatever state that
 * leaves), then h2load's clients walk the list of URIs, each from its start, as fast as answered.
 */
export function spread(count: number, path: string, body?: unknown): Request {
  return async (base, files) => {
    const uris = Array.from({ length: count }, (_, c) => `${base}${path}?c=${c}`)
    const init = body === undefined ? {} : { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) }
    for (let i = 0; i < uris.length; i += 50) {
      await Promise.all(
        uris.slice(i, i + 50).map(async (uri) => {
          const res = await fetch(uri, init)
          await res.arrayBuffer()
          if (res.status !== 200) throw new Error(`${uri}: ${res.status}`)
        })
      )
    }
    return {
      path,
      uriFile: files.uris(uris),
      ...(body === undefined ? {} : { bodyFile: files.body(body), headers: JSON_HEADERS })
    }
  }
}
