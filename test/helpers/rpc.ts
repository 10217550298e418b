import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { Agent } from 'undici'
import { encodeJsonHeader } from '../../src/headers.js'
import { buildServer, type BuildServerOptions } from '../../src/server.js'
import { call } from './helper.js'

export const MODERN = '2026-07-28'
export const LEGACY = '2025-11-25'

/** The 2026-07-28 per-request envelope, with the given client capabilities. */
export const envelope = (caps: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': caps,
  'io.modelcontextprotocol/clientInfo': { name: 'test-client', version: '1.0.0' }
})

/** A header value the way SEP-2243 clients send it: plain ASCII, else `=?base64?...?=`. */
export const mirrored = (v: string) => (/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(v) && !v.startsWith('=?base64?') ? v : `=?base64?${Buffer.from(v).toString('base64')}?=`)

export interface RpcOptions {
  era?: 'modern' | 'legacy'
  id?: string | number
  /** Client capabilities of the envelope (modern). */
  caps?: Record<string, unknown>
  /** Extra or replacing headers; `undefined` removes one. */
  headers?: Record<string, string | undefined>
  url?: string
}

/**
 * POST one JSON-RPC request to /mcp as a conformant client of its era would: 2026-07-28 with the
 * `_meta` envelope and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers; 2025-11-25 with
 * its version header alone.
 */
export function rpc(app: FastifyInstance, method: string, params: Record<string, unknown> = {}, opts: RpcOptions = {}) {
  const modern = (opts.era ?? 'modern') === 'modern'
  const headers: Record<string, string | undefined> = { 'content-type': 'application/json', 'mcp-protocol-version': modern ? MODERN : LEGACY }
  let body = params
  if (modern) {
    body = { ...params, _meta: { ...envelope(opts.caps), ...(params._meta as object | undefined) } }
    headers['mcp-method'] = method
    const name = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined
    if (typeof name === 'string') headers['mcp-name'] = mirrored(name)
  }
  Object.assign(headers, opts.headers)
  for (const [k, v] of Object.entries(headers)) if (v === undefined) delete headers[k]
  return call(app, {
    method: 'POST',
    url: opts.url ?? '/mcp',
    headers: headers as Record<string, string>,
    payload: JSON.stringify({ jsonrpc: '2.0', id: opts.id ?? 1, method, params: body })
  })
}

/** The same call through the Pure HTTP face, in the same era. */
export const pureHeaders = (era: 'modern' | 'legacy', caps?: Record<string, unknown>) => ({
  'content-type': 'application/json',
  'mcp-protocol-version': era === 'modern' ? MODERN : LEGACY,
  ...(era === 'modern' && caps !== undefined ? { 'mcp-meta': encodeJsonHeader(envelope(caps)) } : {})
})

/**
 * A server on a real socket (SSE needs one) and a client agent of its own, both closed at the end:
 * the agent first, as it may hold spare connections the server would otherwise wait out. `url` is
 * the server's /mcp endpoint.
 */
export async function listenWithAgent(t: Test, options: BuildServerOptions): Promise<{ app: FastifyInstance; url: string; agent: Agent }> {
  const app = await buildServer(options)
  const agent = new Agent()
  t.teardown(async () => {
    await agent.destroy()
    await app.close()
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return { app, url: `http://127.0.0.1:${port}/mcp`, agent }
}
