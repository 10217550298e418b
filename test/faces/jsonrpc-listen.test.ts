import t, { type Test } from 'tap'
import { type Agent, fetch } from 'undici'
import { McpServer } from '../../src/core/mcp-server.js'
import { RedisStore } from '../../src/store/redis.js'
import { startRedis } from '../helpers/redis-server.js'
import { sseReader } from '../helpers/sse-reader.js'
import { MODERN, envelope, listenWithAgent } from '../helpers/rpc.js'

/** A server on a real socket with a client agent of its own (see {@link listenWithAgent}). */
const listen = (t: Test, mcp: McpServer) => listenWithAgent(t, { mcp, logger: false, jsonRpc: { keepAliveMs: 25 } })

/** Open a subscriptions/listen stream and read its SSE events (data lines, JSON) and comments. */
async function subscribe(server: { url: string; agent: Agent }, notifications: Record<string, unknown>, id: number | string = 1, signal?: AbortSignal) {
  const res = await fetch(server.url, {
    dispatcher: server.agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: envelope(), notifications } }),
    ...(signal === undefined ? {} : { signal })
  })
  return { res, ...sseReader(res.body!) }
}

t.test('subscriptions/listen: acknowledged first, then only the changes asked for, tagged with the id', async (t) => {
  const mcp = new McpServer({ name: 'l', version: '1' })
  const server = await listen(t, mcp)
  const stream = await subscribe(server, { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['x:y'] }, 'sub-1')
  t.equal(stream.res.status, 200)
  t.equal(stream.res.headers.get('content-type'), 'text/event-stream')
  t.equal(stream.res.headers.get('x-accel-buffering'), 'no')
  t.equal(stream.res.headers.get('mcp-protocol-version'), MODERN)
  const tag = { 'io.modelcontextprotocol/subscriptionId': 'sub-1' }
  const [ack] = await stream.until(1)
  // x:y is no resource of this server (yet), so the acknowledgement honours none.
  t.same(ack, {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { _meta: tag, notifications: { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: [] } }
  })

  mcp.prompt({ name: 'p' }, () => 'p') // not asked for
  const tool = mcp.tool({ name: 'a' }, () => 'a')
  mcp.resourceTemplate({ uriTemplate: 'x:{id}', name: 'x' }, () => 'x')
  tool.remove()
  const events = await stream.until(4)
  t.same(events.slice(1).map((e) => e.method), [
    'notifications/tools/list_changed',
    'notifications/resources/list_changed',
    'notifications/tools/list_changed'
  ])
  t.ok(events.slice(1).every((e) => JSON.stringify(e.params) === JSON.stringify({ _meta: tag })))
  // Quiet streams get comment lines, which carry nothing.
  await new Promise((resolve) => setTimeout(resolve, 80))
  mcp.tool({ name: 'b' }, () => 'b')
  await stream.until(5)
  t.ok(stream.comments() > 0, 'keep-alive comments')

  // A server that closes ends the subscription gracefully: its result, then the end of the stream.
  await server.app.close()
  const all = await stream.until(99)
  t.same(all.at(-1), { jsonrpc: '2.0', id: 'sub-1', result: { resultType: 'complete', _meta: tag } })
})

t.test('resourceSubscriptions: notifications/resources/updated for the URIs asked for, and no others', async (t) => {
  const mcp = new McpServer({ name: 'l', version: '1' })
  mcp.resource({ uri: 'r:a', name: 'a' }, () => 'a')
  mcp.resource({ uri: 'r:b', name: 'b' }, () => 'b')
  mcp.resourceTemplate({ uriTemplate: 't:{id}', name: 't' }, () => 't')
  const server = await listen(t, mcp)
  const stream = await subscribe(server, { resourceSubscriptions: ['r:a', 't:1', 'nope:z'] }, 'res')
  const tag = { 'io.modelcontextprotocol/subscriptionId': 'res' }
  const [ack] = await stream.until(1)
  t.same(ack.params.notifications, { resourceSubscriptions: ['r:a', 't:1'] }, 'only URIs this server serves')
  // A stream that asked for no resource hears none.
  const other = await subscribe(server, { toolsListChanged: true }, 'other')
  await other.until(1)
  await mcp.resourceUpdated('r:b')
  await mcp.resourceUpdated('t:1')
  await mcp.resourceUpdated('nope:z')
  await mcp.resourceUpdated('r:a')
  const events = await stream.until(3)
  t.same(events.slice(1), [
    { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 't:1', _meta: tag } },
    { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'r:a', _meta: tag } }
  ])
  mcp.tool({ name: 'x' }, () => 'x')
  const [, changed] = await other.until(2)
  t.equal(changed.method, 'notifications/tools/list_changed', 'the other stream heard its own change, and no update before it')
  await stream.reader.cancel()
  await other.reader.cancel()
})

t.test('resourceUpdated on one instance reaches listen streams on another through the shared Redis', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const [a, b] = [0, 1].map(() => {
    const mcp = new McpServer({ name: 'l', version: '1', store: new RedisStore({ url: redis.url, prefix: 'listen-test:' }) })
    mcp.resource({ uri: 'r:a', name: 'a' }, () => 'a')
    return mcp
  }) as [McpServer, McpServer]
  const server = await listen(t, a)
  t.teardown(() => Promise.all([a.store.close(), b.store.close()]))
  const stream = await subscribe(server, { resourceSubscriptions: ['r:a'] }, 'x')
  await stream.until(1)
  await Promise.all([a.store.ping(), b.store.ping()])
  await b.resourceUpdated('r:a')
  const [, updated] = await stream.until(2)
  t.same(updated, { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'r:a', _meta: { 'io.modelcontextprotocol/subscriptionId': 'x' } } })
  await stream.reader.cancel()
})

t.test('a client that closes its stream is forgotten: later changes do not reach it', async (t) => {
  const mcp = new McpServer({ name: 'l', version: '1' })
  const server = await listen(t, mcp)
  const controller = new AbortController()
  const gone = await subscribe(server, { promptsListChanged: true }, 1, controller.signal)
  await gone.until(1)
  const stays = await subscribe(server, { promptsListChanged: true }, 2)
  await stays.until(1)
  controller.abort()
  await gone.reader.read().catch(() => undefined)
  // Give the server a moment to see the close, then change the list: only the open stream hears it.
  await new Promise((resolve) => setTimeout(resolve, 50))
  mcp.prompt({ name: 'p' }, () => 'p')
  const [, changed] = await stays.until(2)
  t.same(changed, { jsonrpc: '2.0', method: 'notifications/prompts/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 2 } } })
  await stays.reader.cancel()
})

t.test('the stream is refused like any request when its envelope or headers are wrong', async (t) => {
  const mcp = new McpServer({ name: 'l', version: '1' })
  const { url, agent } = await listen(t, mcp)
  const res = await fetch(url, {
    dispatcher: agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { _meta: envelope(), notifications: {} } })
  })
  t.equal(res.status, 400)
  t.equal(((await res.json()) as { error: { code: number } }).error.code, -32020)
})

t.test('a client that leaves a streamed call aborts it; what is left to say is dropped', async (t) => {
  const mcp = new McpServer({ name: 'l', version: '1' })
  let finished!: (text: string) => void
  const done = new Promise<string>((resolve) => (finished = resolve))
  mcp.tool({ name: 'talks' }, async (_a, ctx) => {
    await ctx.progress(1)
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
    await ctx.progress(2)
    finished('ran to the end')
    return 'late'
  })
  const { url, agent } = await listen(t, mcp)
  const controller = new AbortController()
  const res = await fetch(url, {
    dispatcher: agent,
    method: 'POST',
    signal: controller.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'talks' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'talks', _meta: { ...envelope(), progressToken: 'p' } } })
  })
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  const first = await reader.read()
  t.match(first.value, /^data: \{"jsonrpc":"2\.0","method":"notifications\/progress","params":\{"progressToken":"p","progress":1\}\}/)
  controller.abort()
  t.equal(await done, 'ran to the end')
})
