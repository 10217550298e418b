import t from 'tap'
import { Redis } from 'ioredis'
import { redisCeiling } from '../../bench/servers/redis-ceiling.js'
import { TOO_LARGE } from '../../src/store/memory-tasks.js'
import { INSTANCE_LOST } from '../../src/tasks/task-steps.js'
import { startRedis } from '../helpers/redis-server.js'

// The Redis ceiling of the bench is only fair if it keeps the guarantees the library keeps (issue 22):
// these check the ones of issue 15 on a real redis-server.
const redis = await startRedis()
t.teardown(() => redis.stop())

/** Each test starts from an empty Redis. */
async function flushAll() {
  const admin = new Redis(redis.url)
  await admin.flushall()
  await admin.quit()
}

const task = (taskId: string) => ({ taskId, status: 'working', createdAt: 'now', lastUpdatedAt: 'now', ttlMs: 60_000, pollIntervalMs: 1000 })

t.test("the ceiling bounds an owner's running tasks, and a finished task frees its place", async (t) => {
  const ceiling = await redisCeiling(redis.url, [])
  t.teardown(() => ceiling.close())
  for (let i = 0; i < 100; i++) t.equal(await ceiling.createTask(task(`a${i}`)), true)
  t.equal(await ceiling.createTask(task('a100')), false, 'the 101st running task of one owner is refused')
  t.equal(await ceiling.getTask('a100'), undefined, 'and the task written beside the refused reservation is gone')
  await ceiling.completeTask('a0', { status: 'completed', result: { content: [] } })
  t.equal(await ceiling.createTask(task('a101')), true, 'a finished task no longer counts as running')
  t.match(await ceiling.getTask('a0'), { status: 'completed', result: { content: [] } })
})

t.test("an outcome larger than the owner's bytes is not kept: the task fails", async (t) => {
  await flushAll()
  const ceiling = await redisCeiling(redis.url, [])
  t.teardown(() => ceiling.close())
  t.equal(await ceiling.createTask(task('big')), true)
  await ceiling.completeTask('big', { status: 'completed', result: { content: [{ type: 'text', text: 'x'.repeat(9 * 1024 * 1024) }] } })
  t.match(await ceiling.getTask('big'), { status: 'failed', error: TOO_LARGE }, 'failed as the library fails it')
  t.equal(await ceiling.createTask(task('next')), true, 'and its refusal left no bytes counted behind')
})

t.test('the ceiling hands out a group of notifications and the same group until it is acknowledged', async (t) => {
  await flushAll()
  const ceiling = await redisCeiling(redis.url, [{ method: 'a' }, { method: 'b' }])
  t.teardown(() => ceiling.close())
  const group = await ceiling.take()
  t.same(JSON.parse(group!.json), [{ method: 'a' }, { method: 'b' }], 'as queued, in order')
  t.same(await ceiling.take(), group, 'the same group again')
  t.equal(await ceiling.getTask('none'), undefined)
})

t.test('nothing queued: the ceiling takes nothing (the GET /notifications of the empty workload)', async (t) => {
  await flushAll()
  const ceiling = await redisCeiling(redis.url, [])
  t.teardown(() => ceiling.close())
  t.equal(await ceiling.take(), undefined)
})

t.test("a task whose instance stopped renewing its lease fails when polled, as the library's does", async (t) => {
  await flushAll()
  const first = await redisCeiling(redis.url, [], 300)
  t.equal(await first.createTask(task('orphan')), true)
  await first.close()
  // Another instance (the same keys: one process) polls it once the lease has lapsed.
  const second = await redisCeiling(redis.url, [], 300)
  t.teardown(() => second.close())
  let seen = await second.getTask('orphan')
  t.notOk(seen !== undefined && 'leaseUntil' in seen, 'the lease is not on the wire')
  while (seen?.status === 'working') {
    await new Promise((resolve) => setTimeout(resolve, 50))
    seen = await second.getTask('orphan')
  }
  t.match(seen, { status: 'failed', error: INSTANCE_LOST, statusMessage: INSTANCE_LOST.message })
  t.equal(await second.createTask(task('after')), true)
})

t.test("a running task's lease is renewed by its instance", async (t) => {
  await flushAll()
  const ceiling = await redisCeiling(redis.url, [], 300)
  t.teardown(() => ceiling.close())
  const admin = new Redis(redis.url)
  t.teardown(() => admin.quit())
  t.equal(await ceiling.createTask(task('kept')), true)
  const key = (await admin.keys('*kept*'))[0]!
  const before = Number(await admin.hget(key, 'leaseUntil'))
  t.ok(before > Date.now() - 1000, 'written with a lease')
  let after = before
  while (after === before) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    after = Number(await admin.hget(key, 'leaseUntil'))
  }
  t.ok(after > before, 'pushed back while it runs')
  await ceiling.completeTask('kept', { status: 'completed', result: { content: [] } })
  t.match(await ceiling.getTask('kept'), { status: 'completed' }, 'and a finished task is not failed for its lease')
})

t.test('a Redis that does not answer fails the command after the timeout the store has, not never', async (t) => {
  await flushAll()
  const ceiling = await redisCeiling(redis.url, [])
  t.teardown(() => ceiling.close())
  const admin = new Redis(redis.url)
  t.teardown(() => admin.quit())
  // Paused for twice the timeout: the commands are answered only after it, so they time out.
  await admin.call('CLIENT', 'PAUSE', '4000', 'ALL')
  await t.rejects(ceiling.createTask(task('paused')), /timed out/)
})
