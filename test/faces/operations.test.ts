import t from 'tap'
import type { FastifyRequest } from 'fastify'
import type { Principal } from '../../src/core/request-context.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import { readFileSync } from 'node:fs'
import { ConfigSchema, loadConfig, trustProxyFromConfig } from '../../src/config.js'
import { build, call } from '../helpers/helper.js'
import { startRedis } from '../helpers/redis-server.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const user = async (request: FastifyRequest): Promise<Principal> => {
  const id = request.headers['x-user']
  return typeof id === 'string' ? { id, scopes: [], anonymous: false } : { id: 'anonymous', scopes: [], anonymous: true }
}

t.test('/health and /ready answer outside the MCP routes: no auth, no Host check', async (t) => {
  const store = new MemoryStore()
  const { app } = await build(t, {
    mcp: createDemoServer({ store }),
    authenticate: async () => {
      throw new Error('never asked')
    },
    allowedHosts: ['example.com']
  })
  const health = await call(app, { url: '/health' })
  t.same([health.status, health.body], [200, { status: 'ok' }])
  const ready = await call(app, { url: '/ready' })
  t.same([ready.status, ready.body], [200, { status: 'ready' }])
  store.ping = async () => {
    throw new Error('down')
  }
  const notReady = await call(app, { url: '/ready' })
  t.same([notReady.status, notReady.body, notReady.headers['retry-after']], [503, { code: -32603, message: 'Not ready: the store does not answer' }, '5'])
  store.ping = () => new Promise(() => undefined)
  const slow = await call(app, { url: '/ready' })
  t.equal(slow.status, 503, 'a store that does not answer within 2 s is not ready')
  const openapi = await call(app, { url: '/openapi.json', headers: { host: 'example.com' } })
  t.notOk('/health' in (openapi.body?.paths ?? {}), 'not in the MCP API document')
})

t.test('probes: false leaves them out', async (t) => {
  const { app } = await build(t, { probes: false })
  t.equal((await app.inject({ url: '/health' })).statusCode, 404)
})

t.test('under pressure: 503 with Retry-After, except /health', async (t) => {
  const { app } = await build(t, { loadShedding: { maxHeapUsedBytes: 1, retryAfterSec: 7 } })
  let shed
  for (let i = 0; i < 300; i++) {
    shed = await call(app, { url: '/tools' })
    if (shed.status === 503) break
    await sleep(10)
  }
  t.same([shed!.status, shed!.body, shed!.headers['retry-after']], [503, { code: -32603, message: 'The server is overloaded: retry later' }, '7'])
  t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'a busy process is still alive')
  t.equal((await app.inject({ url: '/ready' })).statusCode, 503, 'but not ready for more')
  const rss = (await build(t, { loadShedding: { maxRssBytes: 1 } })).app
  let byRss
  for (let i = 0; i < 300; i++) {
    byRss = await rss.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
    if (byRss.statusCode === 503) break
    await sleep(10)
  }
  t.same([byRss!.statusCode, byRss!.headers['retry-after']], [503, '5'], 'Retry-After defaults to 5 s')
})

t.test('load shedding with no threshold set is not registered at all (no event-loop sampling)', async (t) => {
  const off = (await build(t, { loadShedding: { maxEventLoopDelayMs: 0, maxHeapUsedBytes: 0, retryAfterSec: 7 } })).app
  t.notOk(off.hasDecorator('memoryUsage'), 'no @fastify/under-pressure')
  const on = (await build(t, { loadShedding: { maxEventLoopDelayMs: 1000 } })).app
  t.ok(on.hasDecorator('memoryUsage'), 'registered once a threshold is set')
})

t.test('rate limits: per principal, anonymous per IP, 429 with Retry-After', async (t) => {
  const { app } = await build(t, { authenticate: user, rateLimit: { max: 2, timeWindowMs: 60_000 } })
  const alice = { 'x-user': 'alice' }
  t.equal((await app.inject({ url: '/tools', headers: alice })).statusCode, 200)
  t.equal((await app.inject({ url: '/tools', headers: alice })).statusCode, 200)
  const limited = await call(app, { url: '/tools', headers: alice })
  t.same([limited.status, limited.body.code], [429, -32600])
  t.match(limited.body.message, /^Rate limit exceeded: at most 2 requests in 60 s; retry in/)
  t.ok(Number(limited.headers['retry-after']) >= 1)
  t.equal((await app.inject({ url: '/tools', headers: { 'x-user': 'bob' } })).statusCode, 200, 'bob has his own bucket')
  await app.inject({ url: '/tools', remoteAddress: '10.0.0.1' })
  await app.inject({ url: '/tools', remoteAddress: '10.0.0.1' })
  t.equal((await app.inject({ url: '/tools', remoteAddress: '10.0.0.1' })).statusCode, 429)
  t.equal((await app.inject({ url: '/tools', remoteAddress: '10.0.0.2' })).statusCode, 200, 'anonymous callers: one bucket per address')
  t.equal((await app.inject({ url: '/health', headers: alice })).statusCode, 200, 'probes are not limited')
})

t.test('rate limits through Redis hold across instances', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const stores = [0, 1].map(() => new RedisStore({ url: redis.url, prefix: 'rl-test:' }))
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  const apps = await Promise.all(stores.map(async (store) => (await build(t, { mcp: createDemoServer({ store }), authenticate: user, rateLimit: { max: 3 } })).app))
  const carol = { 'x-user': 'carol' }
  const codes = []
  for (let i = 0; i < 4; i++) codes.push((await apps[i % 2]!.inject({ url: '/tools', headers: carol })).statusCode)
  t.same(codes, [200, 200, 200, 429], 'one budget, whichever instance answers')
})

t.test('configuration of the operating limits', async (t) => {
  const c = loadConfig({})
  t.same(
    [c.MCP_IDEMPOTENCY_TTL_MS, c.MCP_RATE_LIMIT_MAX, c.MCP_RATE_LIMIT_WINDOW_MS, c.MCP_MAX_EVENT_LOOP_DELAY_MS, c.MCP_MAX_HEAP_USED_BYTES, c.MCP_SHUTDOWN_GRACE_MS],
    [600_000, 0, 60_000, 0, 0, 10_000]
  )
  t.equal(c.MCP_REDIS_URL, undefined)
  t.equal(c.MCP_IDEMPOTENCY_LEASE_MS, 30_000)
  t.same(loadConfig({ MCP_REDIS_URL: 'redis://10.0.0.5:6379/2', MCP_REDIS_PREFIX: 'a:' }).MCP_REDIS_PREFIX, 'a:')
  t.throws(() => loadConfig({ MCP_REDIS_URL: 'http://x' }), /MCP_REDIS_URL="http:\/\/x"/)
  t.throws(() => loadConfig({ MCP_REDIS_PREFIX: 'a:' }), /MCP_REDIS_PREFIX is set without MCP_REDIS_URL/)
  t.throws(() => loadConfig({ MCP_RATE_LIMIT_MAX: '-1' }), /MCP_RATE_LIMIT_MAX=-1/)
  t.equal(trustProxyFromConfig(c), false)
  t.equal(trustProxyFromConfig(loadConfig({ MCP_TRUST_PROXY: 'false' })), false)
  t.equal(trustProxyFromConfig(loadConfig({ MCP_TRUST_PROXY: 'true' })), true)
  t.same(trustProxyFromConfig(loadConfig({ MCP_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' })), ['127.0.0.1', '10.0.0.0/8'])
})

t.test('behind a trusted proxy, the client address comes from X-Forwarded-For', async (t) => {
  const { app } = await build(t, { rateLimit: { max: 1 }, trustProxy: true })
  const from = (ip: string) => app.inject({ url: '/tools', headers: { 'x-forwarded-for': ip } })
  t.same([(await from('1.1.1.1')).statusCode, (await from('1.1.1.1')).statusCode, (await from('2.2.2.2')).statusCode], [200, 429, 200])
})

t.test('two answers to one server-to-client request at once: one is taken, the other is 404', async (t) => {
  const store = new MemoryStore()
  const { app } = await build(t, { mcp: createDemoServer({ store }) })
  await store.mailbox.enqueueRequest('anonymous', 'q1', { method: 'roots/list' })
  // Both answers get past the lookup before either completes the request, as on two instances.
  const lookup = store.mailbox.getRequest.bind(store.mailbox)
  let arrived = 0
  let both: () => void
  const barrier = new Promise<void>((resolve) => (both = resolve))
  store.mailbox.getRequest = async (owner, id) => {
    const found = await lookup(owner, id)
    if (++arrived === 2) both()
    await barrier
    return found
  }
  const answer = () => app.inject({ method: 'POST', url: '/responses', headers: { 'mcp-request-id': 'q1' }, payload: { roots: [] } })
  const codes = (await Promise.all([answer(), answer()])).map((r) => r.statusCode).sort()
  t.same(codes, [202, 404])
})

t.test('docs/configuration.md names every variable the server reads', async (t) => {
  const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8')
  const missing = Object.keys(ConfigSchema.properties).filter((k) => !doc.includes(`\`${k}\``))
  t.same(missing, [], 'each is in the table, or named with the page that explains it')
})
