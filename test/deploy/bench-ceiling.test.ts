import t from 'tap'
import { Redis } from 'ioredis'
import { redisCeiling } from '../../bench/servers/redis-ceiling.js'
import { TOO_LARGE } from '../../src/store/memory-tasks.js'
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
