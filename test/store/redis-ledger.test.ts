import t from 'tap'
import { createHash, randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { RedisStore, type RedisStoreOptions } from '../../src/store/redis.js'
import { Ledger, keySlot } from '../../src/store/redis-ledger.js'
import { startRedis } from '../helpers/redis-server.js'

// The ledgers in shards by owner (src/store/redis-ledger.ts), on one redis-server: every shard on
// the one node. Their spread over a Cluster's masters is in store-redis-cluster.test.ts.
const redis = await startRedis()
t.teardown(() => redis.stop())

const sha1 = (s: string) => createHash('sha1').update(s).digest('hex')
const open = (options: Partial<RedisStoreOptions> = {}) => {
  const store = new RedisStore({ url: redis.url, prefix: `d${randomUUID().slice(0, 8)}:`, ...options })
  t.teardown(() => store.close())
  return store
}
const now = new Date().toISOString()
const task = (taskId: string, ttlMs = 60_000) => ({ taskId, status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs, pollIntervalMs: 1000 })

t.test("a shard's slot: Redis Cluster's CRC16, and the shards spread evenly over the slots", async (t) => {
  // CLUSTER KEYSLOT foo is 12182; 0x31C3 is the CRC16/XMODEM check value of "123456789".
  t.same([keySlot('foo'), keySlot('123456789')], [12182, 0x31c3])
  const ledger = new Ledger('p:', 'tasks', 8, [[80_000, 100]])
  t.equal(ledger.shards, 8)
  for (let k = 0; k < 8; k++) {
    const tag = /^p:\{(g\d+\.\d+)\}:tasks$/.exec(ledger.key(k))![1]!
    t.ok(keySlot(tag) >= k * 2048 && keySlot(tag) < (k + 1) * 2048, `shard ${k} (${tag}) is in the ${k}-th eighth of the slots`)
  }
  t.same(Array.from({ length: 8 }, (_, k) => ledger.share(10, k)), [2, 2, 1, 1, 1, 1, 1, 1], 'the shares add up to the bound')
})

t.test('as many shards as keep every share at least one owner\'s quota, one at the least', async (t) => {
  t.equal(new Ledger('p:', 'tasks', 16, [[10_000, 100], [64, 8]]).shards, 8, 'the defaults: the bytes allow 8')
  t.equal(new Ledger('p:', 'tasks', 4, [[10_000, 100]]).shards, 4, 'never more than asked')
  const one = new Ledger('p:', 'tasks', 16, [[2, 100]])
  t.same([one.shards, one.key(0), one.shardOf(sha1('anyone')), one.share(2, 0)], [1, 'p:{g}:tasks', 0, 2], 'one: the registry slot, the whole bound')
  t.throws(() => new RedisStore({ url: redis.url, ledgerShards: 0 }), /ledgerShards must be an integer from 1 to 256, not 0/)
  t.throws(() => new RedisStore({ url: redis.url, ledgerShards: 257 }), /not 257/)
  t.throws(() => new RedisStore({ url: redis.url, ledgerShards: 1.5 }), /not 1.5/)
  t.equal(open().tasks.ledger.shards, 1, 'one Redis: one shard by default, its bounds exact')
})

t.test("an owner's records all go to its shard; the owners spread over every shard", async (t) => {
  const store = open({ ledgerShards: 4 })
  const raw = new Redis(redis.url)
  t.teardown(() => raw.quit())
  const { tasks, idempotency } = store
  t.same([tasks.ledger.shards, idempotency.ledger.shards], [4, 4])
  const owners = Array.from({ length: 40 }, (_, i) => `owner-${i}`)
  for (const o of owners) {
    await tasks.createTask(o, task('a'))
    await tasks.createTask(o, task('b'))
    await tasks.updateTask(o, 'b', { status: 'completed', result: { content: [] } })
    await idempotency.beginIdempotent(o, 'r', 'd', 60_000)
  }
  const held = async (ledger: Ledger) => Promise.all(Array.from({ length: 4 }, (_, k) => raw.zrange(ledger.key(k), '0', '-1')))
  const [taskShards, idemShards] = [await held(tasks.ledger), await held(idempotency.ledger)]
  t.ok(taskShards.every((ms) => ms.length > 0), `every shard holds tasks: ${taskShards.map((ms) => ms.length).join(', ')}`)
  for (const o of owners) {
    const h = sha1(o)
    const k = tasks.ledger.shardOf(h)
    t.same(taskShards[k]!.filter((m) => m.startsWith(h)).sort(), [`${h}:a`, `${h}:b`], `${o}: both tasks in shard ${k}`)
    t.ok(idemShards[k]!.includes(`${h}:r`), 'and its replay record')
  }
  t.equal(taskShards.flat().length, 80, 'each task once')
  t.same(await raw.zrange(`${tasks.ledger.key(0)}:r`, '0', '-1'), taskShards[0]!.filter((m) => m.endsWith(':a')), 'a shard counts its running tasks (the finished ones left)')
  t.equal(await raw.exists(`${store.prefix}{g}:tasks`), 0, 'nothing on the registry slot')
})

t.test('the store-wide bounds: a share per shard, never more in all; a full shard refuses with when it frees', async (t) => {
  // 4 running tasks in all, one per owner: 4 shards of one each.
  const store = open({ ledgerShards: 4, limits: { maxTasks: 4, maxTasksPerPrincipal: 1 } })
  const ledger = store.tasks.ledger
  t.equal(ledger.shards, 4)
  const owners = Array.from({ length: 60 }, (_, i) => `u${i}`)
  const [a, b] = owners.filter((o) => ledger.shardOf(sha1(o)) === 0)
  const c = owners.find((o) => ledger.shardOf(sha1(o)) === 1)!
  await store.tasks.createTask(a!, task('t', 3000))
  const refused = await store.tasks.createTask(b!, task('t')).catch((e: unknown) => e)
  t.match(refused, { name: 'TooManyTasks', limit: 1, message: 'Too many tasks in progress (1)' }, 'the shard of a and b holds its share: b is refused, with the share as the limit')
  const wait = (refused as { retryAfterMs: number }).retryAfterMs
  t.ok(wait > 0 && wait <= 3000, `Retry-After is when a's task expires (${wait} ms), not a guess`)
  await store.tasks.createTask(c, task('t'))
  t.pass('c, in another shard, is not held back: the error is one-sided (refused below the bound, never above)')
  const made = await Promise.all(owners.map((o) => store.tasks.createTask(o, task('u')).then(() => 1, () => 0)))
  t.equal(made.reduce<number>((n, x) => n + x, 0) + 2, 4, 'however many owners ask, the store holds at most maxTasks running')
  await store.tasks.updateTask(a!, 't', { status: 'completed', result: { content: [] } })
  await store.tasks.createTask(b!, task('t'))
  t.pass("a's task finished: its shard's running slot is b's")
})
