import { setTimeout as sleep } from 'node:timers/promises'
import { Type } from '@sinclair/typebox'
import t from 'tap'
import { request } from 'undici'
import { McpServer } from '../../src/core/mcp-server.js'
import { RedisStore } from '../../src/store/redis.js'
import { MemoryStore } from '../../src/store/memory.js'
import { ANONYMOUS } from '../../src/core/request-context.js'
import { build, call } from '../helpers/helper.js'
import { startCluster } from '../helpers/cluster-harness.js'
import { startRedis, type RedisServer } from '../helpers/redis-server.js'

// A task acknowledged with 202 ends whatever the store does meanwhile (issue #36, finding 2): its
// writes are tried again until the store takes them, and a task whose instance died is reported
// failed instead of staying `working` until its ttl.
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
const tasksMeta = JSON.stringify(TASKS)

/** A tool that sums 1..n, a step at a time, reporting progress at each step (a write each). */
function stepsServer(store: RedisStore | MemoryStore, stepMs: number): McpServer {
  const mcp = new McpServer({ name: 't', version: '1', store })
  mcp.tool({ name: 'steps', input: Type.Object({ n: Type.Integer() }), task: 'required' }, async ({ n }, ctx) => {
    let sum = 0
    for (let i = 1; i <= n; i++) {
      await sleep(stepMs)
      sum += i
      await ctx.progress(i, n, `added ${i} of ${n}`)
    }
    return `sum ${sum}`
  })
  return mcp
}

t.test('tasks running through a Redis that hangs, then is killed and restarted, all complete', async (t) => {
  let redis: RedisServer = await startRedis({ persist: true })
  t.teardown(async () => {
    redis.process.kill('SIGCONT')
    await redis.stop()
  })
  const store = new RedisStore({ url: redis.url, prefix: 'tasks-outage:', commandTimeoutMs: 300 })
  t.teardown(() => store.close())
  const { app } = await build(t, { mcp: stepsServer(store, 150) })

  const created = await Promise.all([10, 11, 12].map((n) => call(app, { method: 'POST', url: '/tools/steps/calls', payload: { arguments: { n }, _meta: TASKS } })))
  t.same(created.map((c) => c.status), [202, 202, 202], 'three tasks acknowledged')
  const ids = created.map((c) => c.body.taskId as string)

  // The tasks run for 1.5 s at least: the store hangs for a second in that time (every command
  // times out), then dies and comes back with what it had written (its append-only file).
  await sleep(300)
  redis.process.kill('SIGSTOP')
  await sleep(1000)
  redis.process.kill('SIGCONT')
  await sleep(200)
  redis.process.kill('SIGKILL')
  await sleep(1000)
  redis = await startRedis({ persist: true, after: redis })

  // Every task ends, with its sum: nothing stays `working`, nothing fails for the outage. Polls may
  // answer 503 until the driver reconnects.
  const ends: unknown[] = []
  for (const [i, id] of ids.entries()) {
    let task: any
    for (let polls = 0; polls < 600 && !['completed', 'failed', 'cancelled'].includes(task?.status); polls++) {
      if (polls > 0) await sleep(100)
      const res = await call(app, { url: `/tasks/${id}`, headers: { 'mcp-meta': tasksMeta } })
      if (res.status === 200) task = res.body
      else t.equal(res.status, 503, 'a poll while the store is away is 503, nothing else')
    }
    const n = 10 + i
    ends.push(task === undefined ? 'never read' : { status: task.status, text: task.result?.content?.[0]?.text, isError: task.result?.isError })
    t.same(ends[i], { status: 'completed', text: `sum ${(n * (n + 1)) / 2}`, isError: undefined }, `task ${i} completed with its sum`)
  }
})

t.test('a progress write the store refuses does not fail the work; the end is written once it answers', async (t) => {
  const redis = await startRedis()
  t.teardown(async () => {
    redis.process.kill('SIGCONT')
    await redis.stop()
  })
  const store = new RedisStore({ url: redis.url, prefix: 'tasks-progress:', commandTimeoutMs: 200 })
  t.teardown(() => store.close())
  const mcp = new McpServer({ name: 't', version: '1', store })
  let reported = 0
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  mcp.tool({ name: 'held', task: 'required' }, async (_args, ctx) => {
    await released
    await ctx.progress(1, 2, 'half way')
    reported++
    return 'done'
  })
  const { app } = await build(t, { mcp })
  const created = await call(app, { method: 'POST', url: '/tools/held/calls', payload: { _meta: TASKS } })
  t.equal(created.status, 202)
  redis.process.kill('SIGSTOP')
  release()
  // The progress write times out (dropped: the work goes on) and the result's is tried again.
  while (reported === 0) await sleep(50)
  await sleep(500)
  redis.process.kill('SIGCONT')
  let task: any
  for (let polls = 0; polls < 300 && task?.status !== 'completed'; polls++) {
    await sleep(50)
    const res = await call(app, { url: `/tasks/${created.body.taskId as string}`, headers: { 'mcp-meta': tasksMeta } })
    if (res.status === 200) task = res.body
  }
  t.match(task, { status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } }, 'the result written after the outage')
  t.notOk(task.result.isError, 'not a tool error made of the outage')
})

t.test('a task whose instance was killed is reported failed by another instance once its lease lapses', async (t) => {
  const cluster = await startCluster(2, 'redis', undefined, { MCP_TASK_LEASE_MS: '2000' })
  t.teardown(() => cluster.stop())
  const [doomed, survivor] = cluster.instances
  // Each instance directly, with the Host the instances accept (nginx's, which fetch cannot send).
  const host = new URL(cluster.url).host
  const to = async (i: typeof doomed, path: string, body?: unknown) => {
    const res = await request(`http://127.0.0.1:${i!.port}${path}`, body === undefined
      ? { headers: { host, 'mcp-meta': tasksMeta } }
      : { method: 'POST', headers: { host, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.statusCode, body: (await res.body.json()) as any }
  }
  const created = await to(doomed, '/tools/slow_compute/calls', { arguments: { n: 100 }, task: { notify: true }, _meta: TASKS })
  t.equal(created.status, 202, `a task on the instance about to die: ${JSON.stringify(created.body)}`)
  const taskId = created.body.taskId as string
  const poll = async () => (await to(survivor, `/tasks/${taskId}`)).body
  // Its instance renews the lease: still working after several leases.
  for (let i = 0; i < 4; i++) {
    await sleep(600)
    t.equal((await poll()).status, 'working', 'working while its instance lives')
  }
  doomed!.process.kill('SIGKILL')
  let task: any
  for (let polls = 0; polls < 600 && task?.status !== 'failed'; polls++) {
    await sleep(100)
    task = await poll()
    if (task.status !== 'failed' && task.status !== 'working') break
  }
  t.match(task, {
    status: 'failed',
    statusMessage: 'The server instance running this task stopped before it finished',
    error: { code: -32603, message: 'The server instance running this task stopped before it finished' }
  })
  t.notOk('leaseUntil' in task, 'the lease is the store\'s, not on the wire')
  // The client asked for notifications/tasks: the failure is one of them.
  const notes = (await to(survivor, '/notifications')).body as any[]
  t.ok(notes.some((n) => n.method === 'notifications/tasks' && n.params.taskId === taskId && n.params.status === 'failed'), 'notifications/tasks says it failed')
})

t.test('leases: renewed while the work runs without touching lastUpdatedAt; a lapsed one fails the task (memory store)', async (t) => {
  const store = new MemoryStore()
  const mcp = new McpServer({ name: 't', version: '1', store, taskLeaseMs: 900 })
  let finish!: () => void
  const held = new Promise<void>((resolve) => (finish = resolve))
  mcp.tool({ name: 'held', task: 'required' }, () => held.then(() => 'done'))
  let stop!: () => void
  const never = new Promise<void>((resolve) => (stop = resolve))
  mcp.tool({ name: 'unending', task: 'required' }, () => never.then(() => 'late'))
  t.teardown(() => stop())
  const { app } = await build(t, { mcp })
  const created = await call(app, { method: 'POST', url: '/tools/held/calls', payload: { _meta: TASKS } })
  const id = created.body.taskId as string
  const read = async () => (await call(app, { url: `/tasks/${id}`, headers: { 'mcp-meta': tasksMeta } })).body
  const before = await read()
  await sleep(2000)
  const after = await read()
  t.equal(after.status, 'working', 'still working after three leases: renewed')
  t.equal(after.lastUpdatedAt, before.lastUpdatedAt, 'renewals are not updates clients see')
  t.notOk('leaseUntil' in after, 'the lease is not on the wire')
  finish()
  let done: any
  for (let i = 0; i < 100 && done?.status !== 'completed'; i++) {
    await sleep(20)
    done = await read()
  }
  t.equal(done.status, 'completed')

  // A lease nobody renews (an instance that is gone) lapses: failed, and the end of the work, if it
  // ever came, would not change that.
  const orphan = await call(app, { method: 'POST', url: '/tools/unending/calls', payload: { _meta: TASKS } })
  const orphanId = orphan.body.taskId as string
  // As if the instance running it had stopped renewing: its lease is in the past.
  t.equal(await store.tasks.renewTask(ANONYMOUS.id, orphanId, Date.now() - 1), true, 'the anonymous connection owns it')
  const lapsed = await call(app, { url: `/tasks/${orphanId}`, headers: { 'mcp-meta': tasksMeta } })
  t.match(lapsed.body, { status: 'failed', error: { code: -32603 } }, 'a lapsed lease: failed on read')
  t.equal(await store.tasks.renewTask(ANONYMOUS.id, orphanId, Date.now() + 1000), false, 'a finished task is not renewed')
  stop()
  await sleep(50)
  t.equal((await call(app, { url: `/tasks/${orphanId}`, headers: { 'mcp-meta': tasksMeta } })).body.status, 'failed', 'the work ending late changes nothing')
})

t.test('an instance that died between a task\'s end and its notification, or before its end: another notifies it, with nobody reading', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  for (const kind of ['memory', 'redis'] as const) {
    await t.test(kind, async (t) => {
      const store = kind === 'memory' ? new MemoryStore() : new RedisStore({ url: redis.url, prefix: 'sweep:' })
      t.teardown(() => store.close())
      // What the dead instance left: one task whose end was written (and marked pending) but whose
      // notification never was, one still `working`. Both leases lapse 300 ms from now.
      const now = Date.now()
      const at = new Date(now).toISOString()
      const base = { createdAt: at, lastUpdatedAt: at, ttlMs: 60_000, pollIntervalMs: 500, notify: true, leaseUntil: now + 300 }
      await store.tasks.createTask(ANONYMOUS.id, { taskId: 'ended', status: 'working', ...base })
      await store.tasks.createTask(ANONYMOUS.id, { taskId: 'orphan', status: 'working', ...base })
      const ended = await store.tasks.updateTask(ANONYMOUS.id, 'ended', { status: 'completed', result: { content: [] } })
      t.equal(ended !== true && ended?.notifyPending, true, 'the end is marked: its notification is pending')

      // Another instance, serving: its sweep (every third of its lease) finds both once they lapse.
      const mcp = new McpServer({ name: 't', version: '1', store, taskLeaseMs: 600 })
      const { app } = await build(t, { mcp })
      const seen = new Map<string, string>()
      for (let i = 0; i < 300 && seen.size < 2; i++) {
        const res = await call(app, { url: '/notifications' })
        for (const n of res.body as any[]) if (n.method === 'notifications/tasks') seen.set(n.params.taskId, n.params.status)
        const group = res.headers['mcp-message-group']
        if (typeof group === 'string') await call(app, { method: 'POST', url: '/notifications', headers: { 'mcp-message-group': group } })
        else await sleep(100)
      }
      t.same(Object.fromEntries(seen), { ended: 'completed', orphan: 'failed' }, 'the end written is notified; the task left running fails, notified')
      const [e, o] = await Promise.all([store.tasks.getTask(ANONYMOUS.id, 'ended'), store.tasks.getTask(ANONYMOUS.id, 'orphan')])
      t.same([e?.notifyPending, o?.notifyPending, o?.statusMessage], [undefined, undefined, 'The server instance running this task stopped before it finished'], 'nothing pending is left')
      t.same(await store.tasks.lapsedTasks(Date.now() + 120_000, 10), [], 'nothing left for a sweep, however late')
    })
  }
})

t.test('a poll of a Redis store\'s lapsed task (one nobody sweeps: no notifications asked) fails it first, then answers it', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const store = new RedisStore({ url: redis.url, prefix: 'poll-lapsed:' })
  t.teardown(() => store.close())
  const at = new Date().toISOString()
  await store.tasks.createTask(ANONYMOUS.id, { taskId: 'left', status: 'working', createdAt: at, lastUpdatedAt: at, ttlMs: 60_000, pollIntervalMs: 500, leaseUntil: Date.now() - 1 })
  const { app } = await build(t, { mcp: new McpServer({ name: 't', version: '1', store }) })
  const polled = await call(app, { url: '/tasks/left', headers: { 'mcp-meta': tasksMeta } })
  t.match(polled.body, { status: 'failed', error: { code: -32603, message: 'The server instance running this task stopped before it finished' } }, 'the text served is the task as failed')
  t.equal((await store.tasks.getTask(ANONYMOUS.id, 'left'))?.status, 'failed', 'and so it is stored')
})
