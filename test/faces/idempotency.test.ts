import t from 'tap'
import { request as httpRequest } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import type { Principal } from '../../src/core/request-context.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import type { Store } from '../../src/store/types.js'
import { build, call } from '../helpers/helper.js'
import { startRedis } from '../helpers/redis-server.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function server(store: Store) {
  const mcp = new McpServer({ name: 't', version: '1', store })
  const runs = { count: 0, slow: 0, wait: 0 }
  let release: (() => void) | undefined
  mcp.tool({ name: 'count', input: Type.Object({ n: Type.Integer() }) }, ({ n }) => `run ${++runs.count} of n=${n}`)
  mcp.tool({ name: 'slow' }, async () => {
    runs.slow++
    await new Promise<void>((resolve) => (release = resolve))
    return 'slow done'
  })
  mcp.tool({ name: 'wait' }, (_a, ctx) => {
    runs.wait++
    return new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('aborted')))
  })
  return { mcp, runs, release: () => release?.() }
}

const user = async (request: FastifyRequest): Promise<Principal> => ({ id: String(request.headers['x-user'] ?? 'anon'), scopes: [], anonymous: false })
const post = (tool: string, id: string | undefined, body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url: `/tools/${tool}/calls`,
  headers: { ...(id === undefined ? {} : { 'mcp-request-id': id }), ...headers },
  payload: body as object
})

t.test('a retried call with the same Mcp-Request-Id runs once and replays the first result', async (t) => {
  const { mcp, runs } = server(new MemoryStore())
  const { app } = await build(t, { mcp, authenticate: user })
  const first = await call(app, post('count', 'call-1', { arguments: { n: 1 } }))
  const again = await call(app, post('count', 'call-1', { arguments: { n: 1 } }))
  t.same([first.status, again.status], [200, 200])
  t.equal(again.raw, first.raw, 'the same body')
  t.same([first.headers['idempotent-replayed'], again.headers['idempotent-replayed']], [undefined, 'true'])
  t.equal(again.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(again.headers['mcp-request-id'], 'call-1')
  t.equal(runs.count, 1, 'the tool ran once')
  const reordered = await call(app, { ...post('count', 'call-1', {}), payload: '{ "arguments" : { "n" : 1 } }', headers: { 'mcp-request-id': 'call-1', 'content-type': 'application/json' } })
  t.equal(reordered.raw, first.raw, 'the same JSON, however it is spaced')
  const other = await call(app, post('count', 'call-1', { arguments: { n: 2 } }))
  t.same([other.status, other.body.code], [409, -32600])
  t.equal(other.body.message, 'Mcp-Request-Id call-1 was already used for a different request')
  const otherTool = await call(app, post('slow', 'call-1', { arguments: { n: 1 } }))
  t.equal(otherTool.status, 409, 'another tool is another request')
  const legacy = await call(app, post('count', 'call-1', { arguments: { n: 1 } }, { 'mcp-protocol-version': '2025-11-25' }))
  t.equal(legacy.status, 409, 'another protocol version is another request')
  const bob = await call(app, post('count', 'call-1', { arguments: { n: 1 } }, { 'x-user': 'bob' }))
  t.same([bob.status, bob.body.content[0].text], [200, 'run 2 of n=1'], 'ids are per principal: bob\'s call-1 is his own')
  await call(app, post('count', undefined, { arguments: { n: 1 } }))
  await call(app, post('count', undefined, { arguments: { n: 1 } }))
  t.equal(runs.count, 4, 'without Mcp-Request-Id nothing is deduplicated')
  const bad = await call(app, post('count', 'call-2', { arguments: 'x' }))
  t.equal(bad.status, 400)
  const fixed = await call(app, post('count', 'call-2', { arguments: { n: 5 } }))
  t.same([fixed.status, fixed.body.content[0].text], [200, 'run 5 of n=5'], 'an error answer is not kept: the id is free again')
  // Arguments that fail the schema are a result (SEP-1303), kept like any other: the same id with
  // other arguments is another request, 409.
  const invalid = await call(app, post('count', 'call-3', { arguments: { n: 'x' } }))
  t.same([invalid.status, invalid.body.isError], [200, true])
  t.same(await call(app, post('count', 'call-3', { arguments: { n: 'x' } })).then((r) => r.body), invalid.body, 'replayed')
  t.equal((await call(app, post('count', 'call-3', { arguments: { n: 6 } }))).status, 409)
  const streamed = async () =>
    (await app.inject({ ...post('count', 'stream-1', { arguments: { n: 9 } }), headers: { 'mcp-request-id': 'stream-1', accept: 'text/event-stream' } })).payload
  t.match(await streamed(), /event: result\ndata: .*run 6 of n=9/)
  t.match(await streamed(), /run 7 of n=9/, 'a stream is not replayed: it runs again')
  const ping = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-request-id': 'call-1' } })
  t.equal(ping.statusCode, 202, 'only tool calls are deduplicated')
})

t.test('while the first attempt runs, a retry gets 409 with Retry-After', async (t) => {
  const store = new MemoryStore()
  const { mcp, runs, release } = server(store)
  const { app } = await build(t, { mcp, idempotencyLeaseMs: 600 })
  const renew = store.idempotency.renewIdempotent.bind(store.idempotency)
  let renewed = 0
  store.idempotency.renewIdempotent = async (...args) => {
    if (++renewed === 2) throw new Error('Redis hiccup')
    return renew(...args)
  }
  const first = call(app, post('slow', 'long-1', {}))
  for (let i = 0; i < 300 && renewed < 3; i++) await sleep(10)
  const retry = await call(app, post('slow', 'long-1', {}))
  t.same([retry.status, retry.body.code, retry.headers['retry-after']], [409, -32600, '1'])
  t.match(retry.body.message, /still running: retry later/)
  t.ok(renewed >= 2, 'the claim is renewed while the call runs (and a failed renewal is only logged)')
  release()
  t.equal((await first).body.content[0].text, 'slow done')
  const replay = await call(app, post('slow', 'long-1', {}))
  t.same([replay.status, replay.body.content[0].text, runs.slow], [200, 'slow done', 1])
})

t.test('idempotencyTtlMs: 0 turns it off', async (t) => {
  const { mcp, runs } = server(new MemoryStore())
  const { app } = await build(t, { mcp, idempotencyTtlMs: 0 })
  await call(app, post('count', 'x', { arguments: { n: 1 } }))
  await call(app, post('count', 'x', { arguments: { n: 1 } }))
  t.equal(runs.count, 2)
})

t.test('a client that went away before its answer leaves nothing: the retry runs again', async (t) => {
  const { mcp, runs } = server(new MemoryStore())
  const { app } = await build(t, { mcp })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/tools/wait/calls', headers: { 'content-type': 'application/json', 'mcp-request-id': 'gone-1' } })
  req.on('error', () => undefined)
  req.end('{}')
  for (let i = 0; i < 100 && runs.wait === 0; i++) await sleep(10)
  req.destroy()
  // 409 while the first attempt winds down; then the id is free and the tool runs again.
  const retry = (async () => {
    for (let i = 0; i < 100; i++) {
      const res = await call(app, post('wait', 'gone-1', {}))
      if (res.status !== 409) return res
      await sleep(20)
    }
    throw new Error('still 409')
  })()
  for (let i = 0; i < 200 && runs.wait < 2; i++) await sleep(10)
  t.equal(runs.wait, 2, 'the cancelled first attempt was not replayed')
  await app.inject({ method: 'POST', url: '/notifications', payload: [{ method: 'notifications/cancelled', params: { requestId: 'gone-1' } }] })
  t.equal((await retry).body.content[0].text, 'aborted')
})

t.test('through Redis: a retry on another instance replays what the first instance answered', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const stores = [0, 1].map(() => new RedisStore({ url: redis.url, prefix: 'idem:' }))
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  const a = server(stores[0]!)
  const b = server(stores[1]!)
  const appA = (await build(t, { mcp: a.mcp })).app
  const appB = (await build(t, { mcp: b.mcp })).app
  const first = await call(appA, post('count', 'r-1', { arguments: { n: 3 } }))
  const retry = await call(appB, post('count', 'r-1', { arguments: { n: 3 } }))
  t.same([retry.raw, retry.headers['idempotent-replayed'], a.runs.count, b.runs.count], [first.raw, 'true', 1, 0])
  const conflict = await call(appB, post('count', 'r-1', { arguments: { n: 4 } }))
  t.equal(conflict.status, 409)
})
