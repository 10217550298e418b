import t, { type Test } from 'tap'
import { McpServer } from '../../src/core/mcp-server.js'
import { wireErrorOf } from '../../src/errors.js'
import { DEFAULT_LIMITS } from '../../src/store/limits.js'
import { RedisCore, storeFailure } from '../../src/store/redis-core.js'
import { RedisStore } from '../../src/store/redis.js'
import { StoreError, StoreUnavailable } from '../../src/store/store-errors.js'
import { build, call } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'
import { startRedis } from '../helpers/redis-server.js'

// A Redis that stops answering mid-test (SIGSTOP: the socket stays open, nothing comes back; then
// killed: connections refused). Every face answers 503 with Retry-After and words of ours, and a
// task call is a 503 too, never a 200 isError carrying the driver's text.
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } }
const meta = { 'io.modelcontextprotocol/clientCapabilities': TASKS }
const UNAVAILABLE = { code: -32603, message: 'The server\'s store is not answering: retry shortly' }
const DRIVER = /ioredis|timed out|Connection|ECONN|Stream|MaxRetries|closed/i

interface Answer {
  status: number
  body: any
  headers: Record<string, unknown>
  raw: string
}

/** Every call answers 503 with Retry-After, in our words (a JSON-RPC call's in its error), never the driver's. */
async function expectDown(t: Test, calls: Record<string, () => Promise<Answer>>, state: string): Promise<void> {
  for (const [name, c] of Object.entries(calls)) {
    const res = await c()
    const error = name.startsWith('rpc') ? res.body.error : res.body
    t.equal(res.status, 503, `${state}: ${name} is 503`)
    t.same(error, UNAVAILABLE, `${state}: ${name} says so in our words`)
    t.equal(res.headers['retry-after'], '1', `${state}: ${name} has Retry-After`)
    t.notMatch(res.raw, DRIVER, `${state}: no driver text on the wire (${name})`)
  }
}

/** The status of `probe` once it is 200, or its last after 100 tries 0.1 s apart. */
async function untilBack(probe: () => Promise<Answer>): Promise<number> {
  let back = 0
  for (let i = 0; i < 100 && back !== 200; i++) {
    back = (await probe()).status
    if (back !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return back
}

t.test('a Redis that hangs, then is gone: fast 503s in our words on both faces', async (t) => {
  const redis = await startRedis()
  t.teardown(async () => {
    redis.process.kill('SIGCONT')
    await redis.stop()
  })
  const store = new RedisStore({ url: redis.url, prefix: 'outage:', commandTimeoutMs: 300 })
  t.teardown(() => store.close())
  const mcp = new McpServer({ name: 't', version: '1', store })
  mcp.tool({ name: 'echo' }, () => 'echoed')
  mcp.tool({ name: 'job', task: 'required' }, () => 'done')
  const { app } = await build(t, { mcp })

  const calls = {
    replayable: () => call(app, { method: 'POST', url: '/tools/echo/calls', headers: { 'mcp-request-id': `r-${Math.random()}` }, payload: {} }),
    task: () => call(app, { method: 'POST', url: '/tools/job/calls', payload: { _meta: meta } }),
    notifications: () => call(app, { url: '/notifications' }),
    rpcTask: () => rpc(app, 'tools/call', { name: 'job', arguments: {} }, { caps: TASKS }),
    rpcLogLevel: () => rpc(app, 'logging/setLevel', { level: 'info' }, { era: 'legacy' })
  }
  const before = await Promise.all(Object.values(calls).map((c) => c()))
  t.same(before.map((r) => r.status), [200, 202, 200, 200, 200], 'all well while Redis answers')

  redis.process.kill('SIGSTOP')
  await expectDown(t, calls, 'hanging')
  redis.process.kill('SIGCONT')
  t.equal(await untilBack(calls.replayable), 200, 'answers again once Redis does')

  await redis.stop()
  await expectDown(t, calls, 'gone')
  await t.rejects(store.ping(), StoreUnavailable, 'readiness fails with the same error')
})

t.test('webhooks with the store down: 503 with Retry-After in our words, like every other route', async (t) => {
  const redis = await startRedis()
  t.teardown(async () => {
    redis.process.kill('SIGCONT')
    await redis.stop()
  })
  const store = new RedisStore({ url: redis.url, prefix: 'outage-wh:', commandTimeoutMs: 300 })
  t.teardown(() => store.close())
  const mcp = new McpServer({ name: 't', version: '1', store })
  // A public literal: registered without DNS; nothing is ever delivered (no notification arises).
  const { app } = await build(t, { mcp, webhooks: { pollMs: 60_000 } })
  const made = await call(app, { method: 'POST', url: '/webhooks', payload: { url: 'https://93.184.216.34/hook' } })
  t.equal(made.status, 201, 'registered while Redis answers')
  const id = made.body.id as string
  const calls: Record<string, () => ReturnType<typeof call>> = {
    register: () => call(app, { method: 'POST', url: '/webhooks', payload: { url: 'https://93.184.216.34/other' } }),
    list: () => call(app, { url: '/webhooks' }),
    get: () => call(app, { url: `/webhooks/${id}` }),
    deliveries: () => call(app, { url: `/webhooks/${id}/deliveries` }),
    delete: () => call(app, { method: 'DELETE', url: `/webhooks/${id}` })
  }
  redis.process.kill('SIGSTOP')
  await expectDown(t, calls, 'hanging')
  redis.process.kill('SIGCONT')
  // Not get: the delete sent while Redis hung runs once it wakes (the reply timed out, not the command).
  t.equal(await untilBack(calls.list!), 200, 'answers again once Redis does')
  await redis.stop()
  await expectDown(t, calls, 'gone')
})

t.test('storeFailure: what the driver throws, as our errors', async (t) => {
  const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' })
  t.ok(storeFailure(new Error('Connection is closed.')) instanceof StoreUnavailable, 'a lost connection')
  t.ok(storeFailure(reply('OOM command not allowed when used memory > maxmemory')) instanceof StoreUnavailable, 'Redis out of memory: come back later')
  t.ok(storeFailure(reply('CLUSTERDOWN The cluster is down')) instanceof StoreUnavailable)
  const bug = storeFailure(reply('ERR user_script:1: Script attempted to access nonexistent global variable'))
  t.match(bug, { code: 'ERR_STORE_FAILED', message: 'The store refused a command' }, 'a script error is a bug of ours')
  t.equal(wireErrorOf(bug), undefined, 'an opaque 500, logged with its cause')
  t.match(bug.cause, { name: 'ReplyError' })
  const own = new StoreError('ERR_STORE_QUEUE_FULL', 'full')
  t.equal(storeFailure(own), own, 'our own errors pass as they are')
  t.match(new StoreUnavailable(new Error('x')).cause, { message: 'x' })
})

t.test('guard: a command that throws before it is sent rejects in our words, like one that fails', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const core = new RedisCore({ url: redis.url }, 'guard:', DEFAULT_LIMITS, { connectionTtlMs: 60_000, answerTtlMs: 60_000, sweepMs: 5000, ledgerShards: 1 })
  t.teardown(() => {
    core.bus.close()
    core.client.disconnect()
    core.sub.disconnect()
  })
  let threw = false
  let answer: Promise<unknown> | undefined
  try {
    answer = core.guard(() => {
      throw new Error('Connection is closed.')
    })
  } catch {
    threw = true
  }
  t.equal(threw, false, 'never a synchronous throw')
  await t.rejects(answer!, StoreUnavailable)
  t.equal(await core.guard(() => core.client.ping()), 'PONG', 'the next command goes as usual')
})
