import t, { type Test } from 'tap'
import { fetch } from 'undici'
import type { FastifyRequest } from 'fastify'
import { McpServer } from '../../src/core/mcp-server.js'
import type { BuildServerOptions } from '../../src/server.js'
import { loadConfig } from '../../src/config.js'
import { StreamSlots } from '../../src/plugins/stream-slots.js'
import { MODERN, envelope, listenWithAgent } from '../helpers/rpc.js'

/**
 * A catalogue whose `hangs` tool reports progress (which opens a /mcp stream) and then waits until
 * its client goes away; `left` counts the calls that saw their client leave.
 */
function catalogue() {
  const mcp = new McpServer({ name: 's', version: '1' })
  let left = 0
  const waiters: (() => void)[] = []
  mcp.tool({ name: 'hangs' }, async (_a, ctx) => {
    await ctx.progress(1)
    await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()))
    left++
    for (const w of waiters.splice(0)) w()
    return 'aborted'
  })
  mcp.tool({ name: 'quick' }, () => 'ok')
  /** Resolves once `n` calls in all have seen their client leave. */
  const leftAt = async (n: number) => {
    while (left < n) await new Promise<void>((resolve) => waiters.push(resolve))
  }
  return { mcp, leftAt }
}

async function serve(t: Test, options: Partial<BuildServerOptions> = {}) {
  const { mcp, leftAt } = catalogue()
  const server = await listenWithAgent(t, { mcp, logger: false, streams: { maxPerPrincipal: 2 }, ...options })
  return { ...server, base: server.url.slice(0, -'/mcp'.length), leftAt }
}

type Server = Awaited<ReturnType<typeof serve>>

/** A streamed Pure HTTP tools/call, returned once its headers are in (the body is left unread). */
function restStream(s: Server, tool: string, signal?: AbortSignal, headers: Record<string, string> = {}) {
  return fetch(`${s.base}/tools/${tool}/calls`, {
    dispatcher: s.agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: '{}',
    ...(signal === undefined ? {} : { signal })
  })
}

/** A 2026-07-28 JSON-RPC request to /mcp from a client that takes SSE. */
function rpcPost(s: Server, method: string, params: Record<string, unknown>, signal?: AbortSignal) {
  const name = typeof params.name === 'string' ? { 'mcp-name': params.name } : {}
  return fetch(s.url, {
    dispatcher: s.agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method, ...name },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method, params: { ...params, _meta: { ...envelope(), progressToken: 'p' } } }),
    ...(signal === undefined ? {} : { signal })
  })
}

/** Try `open` until it is not refused with 429 (a released slot is freed when the server sees the socket close). */
async function whenFree(open: () => Promise<{ status: number; body: { cancel(): Promise<void> } | null }>) {
  for (;;) {
    const res = await open()
    if (res.status !== 429) return res
    await res.body?.cancel()
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

t.test('Pure HTTP: a client holds at most maxPerPrincipal streams; the next is 429 in the error shape; an abort gives the slot back', async (t) => {
  const s = await serve(t)
  const aborts = [new AbortController(), new AbortController()]
  const open = await Promise.all(aborts.map((a) => restStream(s, 'hangs', a.signal)))
  t.same(open.map((r) => [r.status, r.headers.get('content-type')]), [[200, 'text/event-stream'], [200, 'text/event-stream']])

  const refused = await restStream(s, 'hangs', undefined, { 'mcp-request-id': 'third' })
  t.equal(refused.status, 429)
  t.equal(refused.headers.get('retry-after'), '5')
  t.equal(refused.headers.get('content-type'), 'application/json; charset=utf-8')
  t.equal(refused.headers.get('mcp-request-id'), 'third')
  t.same(await refused.json(), { code: -32600, message: 'Too many open streams: at most 2 per client at once; end one, or retry later' })
  const plain = await fetch(`${s.base}/tools/quick/calls`, { dispatcher: s.agent, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(plain.status, 200, 'an answer that is not a stream holds no slot')
  await plain.body?.cancel()

  aborts[0]!.abort()
  await s.leftAt(1)
  const again = new AbortController()
  const next = await restStream(s, 'hangs', again.signal)
  t.equal(next.status, 200, 'the aborted stream gave its slot back')
  again.abort()
  aborts[1]!.abort()
  await s.leftAt(3)
})

t.test('a stream that ends with its result gives its slot back', async (t) => {
  const s = await serve(t, { streams: { maxPerPrincipal: 1 } })
  for (let i = 0; i < 3; i++) {
    const res = await restStream(s, 'quick')
    t.equal(res.status, 200)
    t.match(await res.text(), /event: result/)
  }
})

t.test('/mcp: tools/call streams and subscriptions/listen share the share; the refusal is 429 with a JSON-RPC error', async (t) => {
  const s = await serve(t)
  const call = new AbortController()
  const listen = new AbortController()
  const streamed = await rpcPost(s, 'tools/call', { name: 'hangs', arguments: {} }, call.signal)
  t.same([streamed.status, streamed.headers.get('content-type')], [200, 'text/event-stream'])
  const listening = await rpcPost(s, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, listen.signal)
  t.same([listening.status, listening.headers.get('content-type')], [200, 'text/event-stream'])

  for (const [method, params] of [['tools/call', { name: 'quick', arguments: {} }], ['subscriptions/listen', { notifications: {} }]] as const) {
    const refused = await rpcPost(s, method, params)
    t.equal(refused.status, 429, method)
    t.equal(refused.headers.get('retry-after'), '5')
    t.same(await refused.json(), { jsonrpc: '2.0', id: 9, error: { code: -32600, message: 'Too many open streams: at most 2 per client at once; end one, or retry later' } })
  }
  const rest = await restStream(s, 'quick')
  t.equal(rest.status, 429, 'both faces count against one share')
  await rest.body?.cancel()
  const list = await rpcPost(s, 'tools/list', {})
  t.equal(list.status, 200, 'a method that never streams holds no slot')
  await list.body?.cancel()

  call.abort()
  await s.leftAt(1)
  const freed = await rpcPost(s, 'tools/call', { name: 'quick', arguments: {} })
  t.same([freed.status, ((await freed.json()) as { result: unknown }).result], [200, { content: [{ type: 'text', text: 'ok' }], resultType: 'complete' }])

  listen.abort()
  // The listen stream's slot comes back once the server sees its socket close.
  const relisten = new AbortController()
  const back = await whenFree(() => rpcPost(s, 'subscriptions/listen', { notifications: {} }, relisten.signal))
  t.equal(back.status, 200)
  relisten.abort()
})

t.test('each client has its own share; the instance bound is 503', async (t) => {
  const s = await serve(t, {
    streams: { maxPerPrincipal: 1, max: 2 },
    authenticate: async (request: FastifyRequest) => ({ id: String(request.headers['x-user']), scopes: [], anonymous: false })
  })
  const aborts = [new AbortController(), new AbortController()]
  t.equal((await restStream(s, 'hangs', aborts[0]!.signal, { 'x-user': 'alice' })).status, 200)
  const alice = await restStream(s, 'hangs', undefined, { 'x-user': 'alice' })
  t.equal(alice.status, 429)
  await alice.body?.cancel()
  t.equal((await restStream(s, 'hangs', aborts[1]!.signal, { 'x-user': 'bob' })).status, 200, 'bob has his own share')
  const carol = await restStream(s, 'hangs', undefined, { 'x-user': 'carol' })
  t.same([carol.status, carol.headers.get('retry-after'), await carol.json()], [503, '5', { code: -32603, message: 'This server holds as many streams as it can: retry later' }])
  for (const a of aborts) a.abort()
  await s.leftAt(2)
})

t.test('StreamSlots: defaults, and a response already gone holds nothing', async (t) => {
  const slots = new StreamSlots()
  t.same([slots.maxPerPrincipal, slots.max, slots.open], [100, 10_000, 0])
  const request = { ip: '10.0.0.1', mcpState: { principal: { id: 'anonymous', scopes: [], anonymous: true } } } as never
  slots.take(request, { raw: { destroyed: true } } as never)
  t.equal(slots.open, 0)
  const c = loadConfig({})
  t.same([c.MCP_MAX_STREAMS_PER_PRINCIPAL, c.MCP_MAX_STREAMS], [100, 10_000])
  t.throws(() => loadConfig({ MCP_MAX_STREAMS_PER_PRINCIPAL: '0' }), /MCP_MAX_STREAMS_PER_PRINCIPAL=0/)
})
