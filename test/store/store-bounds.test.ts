import t, { type Test } from 'tap'
import type { FastifyRequest } from 'fastify'
import { McpServer } from '../../src/core/mcp-server.js'
import type { Principal } from '../../src/core/request-context.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import type { Store, StoreLimits } from '../../src/store/types.js'
import { build, call } from '../helpers/helper.js'
import { startRedis } from '../helpers/redis-server.js'

// The store's bounds as a client meets them, through both stores: a replay cap that never evicts a
// running call, per-principal quotas (429), a full store (503), each with a Retry-After that holds.
const redis = await startRedis()
t.teardown(() => redis.stop())

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
const user = async (request: FastifyRequest): Promise<Principal> => ({ id: String(request.headers['x-user'] ?? 'anon'), scopes: [], anonymous: false })
const post = (tool: string, id: string | undefined, body: object = {}, who = 'alice') => ({
  method: 'POST' as const,
  url: `/tools/${tool}/calls`,
  headers: { 'x-user': who, ...(id === undefined ? {} : { 'mcp-request-id': id }) },
  payload: body
})

const kinds: [string, (limits: Partial<StoreLimits>) => Store][] = [
  ['memory', (limits) => new MemoryStore(limits)],
  ['redis', (limits) => new RedisStore({ url: redis.url, prefix: `b${Math.random().toString(36).slice(2, 8)}:`, limits })]
]

for (const [kind, open] of kinds) {
  async function serve(t: Test, limits: Partial<StoreLimits>) {
    const store = open(limits)
    t.teardown(() => store.close())
    const mcp = new McpServer({ name: 't', version: '1', store })
    const runs = { slow: 0, big: 0, huge: 0 }
    const releases: (() => void)[] = []
    mcp.tool({ name: 'slow' }, async () => {
      runs.slow++
      await new Promise<void>((resolve) => releases.push(resolve))
      return 'slow done'
    })
    mcp.tool({ name: 'big' }, () => {
      runs.big++
      return 'x'.repeat(3000)
    })
    mcp.tool({ name: 'huge' }, () => {
      runs.huge++
      return 'h'.repeat(400_000)
    })
    mcp.tool({ name: 'job', task: 'required', taskTtlMs: 60_000 }, async () => {
      await new Promise<void>((resolve) => releases.push(resolve))
      return 'job done'
    })
    const { app } = await build(t, { mcp, authenticate: user })
    return { app, runs, release: () => releases.splice(0).forEach((r) => r()) }
  }

  t.test(`${kind}: at the replay cap a running call is kept and the new one refused (503), so its retry is a 409, not a second run`, async (t) => {
    const { app, runs, release } = await serve(t, { maxIdempotencyRecords: 1 })
    const running = call(app, post('slow', 'first'))
    while (runs.slow < 1) await sleep(5)
    const refused = await call(app, post('big', 'second', {}, 'bob'))
    t.equal(refused.status, 503)
    t.same(refused.body, { code: -32603, message: 'The server holds as many replayable tool calls as it may (1): retry later' })
    // The lease of the running claim (30 s) is when space is certain to free.
    t.ok(Number(refused.headers['retry-after']) >= 29 && Number(refused.headers['retry-after']) <= 30, `Retry-After ${refused.headers['retry-after']}`)
    t.equal(runs.big, 0, 'the refused call did not run')
    const retry = await call(app, post('slow', 'first'))
    t.equal(retry.status, 409, 'the retry of the running call finds it running')
    t.equal(runs.slow, 1, 'and the tool ran once')
    release()
    t.equal((await running).status, 200)
    const replay = await call(app, post('slow', 'first'))
    t.same([replay.status, replay.headers['idempotent-replayed'], runs.slow], [200, 'true', 1])
    t.equal((await call(app, post('big', undefined, {}, 'bob'))).status, 200, 'a call without Mcp-Request-Id is not held back')
  })

  t.test(`${kind}: a principal over its replay quota gets 429 with Retry-After; others do not`, async (t) => {
    const { app, runs } = await serve(t, { maxIdempotencyRecordsPerPrincipal: 2, maxIdempotencyBytesPerPrincipal: 8192 })
    for (const id of ['1', '2']) t.equal((await call(app, post('big', id))).status, 200)
    const over = await call(app, post('big', '3'))
    t.equal(over.status, 429)
    t.same(over.body, { code: -32600, message: 'This client holds as many replayable tool calls as it may (2): retry later' })
    // The first replay record expires after MCP_IDEMPOTENCY_TTL_MS (10 min).
    t.ok(Number(over.headers['retry-after']) > 590 && Number(over.headers['retry-after']) <= 600, `Retry-After ${over.headers['retry-after']}`)
    t.equal((await call(app, post('big', '1', {}, 'bob'))).status, 200, 'bob has his own share')
    t.equal(runs.big, 3)
  })

  t.test(`${kind}: large answers with fresh ids fill no more than a principal's share (the 400 KB replay flood)`, async (t) => {
    // Default limits: 8 MiB of replays per principal, so about 20 answers of 400 KB are kept.
    const { app, runs } = await serve(t, {})
    for (let i = 0; i < 25; i++) t.equal((await call(app, post('huge', `flood-${i}`))).status, 200)
    const first = await app.inject(post('huge', 'flood-0'))
    t.same([first.statusCode, first.headers['idempotent-replayed'], runs.huge], [200, 'true', 25], 'the first answers are kept and replayed')
    const last = await app.inject(post('huge', 'flood-24'))
    t.same([last.statusCode, last.headers['idempotent-replayed'], runs.huge], [200, undefined, 26], 'beyond the share an answer is sent but not kept: its retry runs again')
    const bob = await app.inject(post('huge', 'b-1', {}, 'bob'))
    const bobAgain = await app.inject(post('huge', 'b-1', {}, 'bob'))
    t.equal(bobAgain.headers['idempotent-replayed'], 'true', 'another principal\'s answers are still kept')
    t.equal(bob.statusCode, 200)
  })

  t.test(`${kind}: a principal over its task quota gets 429; finished tasks free their slot`, async (t) => {
    const { app, release } = await serve(t, { maxTasksPerPrincipal: 1 })
    const first = await call(app, post('job', undefined, { _meta: TASKS }))
    t.equal(first.status, 202)
    const over = await call(app, post('job', undefined, { _meta: TASKS }))
    t.equal(over.status, 429)
    t.same(over.body, { code: -32600, message: 'This client holds as many running tasks as it may (1): retry later' })
    t.ok(Number(over.headers['retry-after']) >= 59 && Number(over.headers['retry-after']) <= 60, 'when its running task expires at the latest')
    t.equal((await call(app, post('job', undefined, { _meta: TASKS }, 'bob'))).status, 202, 'bob is not held back')
    release()
    for (let i = 0; i < 200; i++) {
      const task = await call(app, { url: `/tasks/${first.body.taskId}`, headers: { 'x-user': 'alice', 'mcp-meta': JSON.stringify(TASKS) } })
      if (task.body.status === 'completed') break
      await sleep(10)
    }
    t.equal((await call(app, post('job', undefined, { _meta: TASKS }))).status, 202, 'a finished task no longer takes a running slot')
  })
}
