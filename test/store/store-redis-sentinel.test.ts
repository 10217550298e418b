import t from 'tap'
import { randomUUID } from 'node:crypto'
import { RedisStore, type RedisStoreOptions } from '../../src/store/redis.js'
import { loadConfig } from '../../src/config.js'
import { createStore } from '../../src/store/index.js'
import { storeContract } from '../helpers/store-contract.js'
import { redisStoreFactory } from '../helpers/redis-store-factory.js'
import { cli, until } from '../helpers/redis-cluster.js'
import { startSentinelSet } from '../helpers/redis-sentinel.js'
import { startRedisProxy } from '../../bench/lib/redis-proxy.js'

// A primary, its replica and three Sentinels, started once for this file.
const set = await startSentinelSet()
t.teardown(() => set.stop())

const open = (options: Partial<RedisStoreOptions> = {}) =>
  new RedisStore({ sentinels: set.sentinels.split(','), sentinelMaster: set.name, ...options })

t.test('the contract, under Sentinel', async (t) => {
  storeContract(t, redisStoreFactory(open))
})

t.test('createStore: MCP_REDIS_SENTINELS and MCP_REDIS_SENTINEL_MASTER', async (t) => {
  const store = createStore(loadConfig({ MCP_REDIS_SENTINELS: set.sentinels, MCP_REDIS_SENTINEL_MASTER: set.name, MCP_REDIS_PREFIX: `e${randomUUID().slice(0, 8)}:` }))
  t.teardown(() => store.close())
  t.ok(store instanceof RedisStore)
  await store.ping()
  await store.connections.setLogLevel('alice', 'debug')
  t.equal(await store.connections.getLogLevel('alice'), 'debug')
})

t.test('a store closed at any moment of connecting leaves no failover detector behind', async (t) => {
  // The failover detector is the one client of a Sentinel that subscribes (to +switch-master).
  const ports = set.sentinels.split(',').map((s) => Number(s.split(':')[1]))
  const detectors = () => ports.reduce((n, p) => n + cli(p, 'client', 'list').split('\n').filter((l) => / cmd=subscribe /.test(l)).length, 0)
  // Closes spread over the first milliseconds: while asking the Sentinels, while the socket to the
  // primary connects, once connected. ioredis 6.0 alone leaves dozens here, and the process hangs.
  for (let round = 0; round < 40; round++) {
    const stores = Array.from({ length: 5 }, () => open())
    await Promise.all(stores.map((s, i) => new Promise((resolve) => setTimeout(resolve, (round % 10) * 0.5 + i)).then(() => s.close())))
  }
  // No store of this file is open now (the subtests before closed theirs).
  await until(async () => detectors() === 0, 'closed detectors to leave the Sentinels').catch(() => undefined)
  t.equal(detectors(), 0, 'no client subscribed on any Sentinel')
})

t.test('kill -9 of the primary: a replica takes over, the stores follow by themselves, nothing acknowledged with WAIT is lost', async (t) => {
  const prefix = `f${randomUUID().slice(0, 8)}:`
  const durable = open({ prefix, waitReplicas: 1, sweepMs: 500 })
  const plain = open({ prefix, sweepMs: 500 })
  t.teardown(() => Promise.all([durable.close(), plain.close()]))
  await Promise.all([durable.ping(), plain.ping()])
  for (let i = 0; i < 50; i++) await durable.mailbox.pushNotification(`o${i % 5}`, { method: 'n', params: { i } })
  await set.master.crash()
  // Reads through the store that wrote: it asks the Sentinels for the new primary by itself.
  let got: number[] = []
  await until(async () => {
    got = []
    for (let o = 0; o < 5; o++) {
      const g = await durable.mailbox.takeNotifications(`o${o}`)
      got.push(...(g?.notifications ?? []).map((n) => (n.params as { i: number }).i))
    }
    return got.length > 0
  }, 'the replica to take over', 60) // a failed election is retried after twice failover-timeout (10 s): loaded cores may need two
  t.equal(got.length, 50, 'all 50 acknowledged notifications survived')
  await plain.mailbox.enqueueRequest('alice', 'after', { method: 'roots/list' })
  const answer = plain.mailbox.awaitAnswer('alice', 'after', new AbortController().signal, 20_000)
  await until(async () => (await plain.mailbox.getRequest('alice', 'after')) !== undefined, 'the request to be readable')
  const other = open({ prefix })
  t.teardown(() => other.close())
  await other.mailbox.completeRequest('alice', 'after', { result: { roots: [] } })
  t.same(await answer, { result: { roots: [] } }, 'a wake-up after the failover')
})

t.test('a failover heard while reconnecting: every store writes and hears wake-ups again', async (t) => {
  // A set of its own (the one above lost its primary). Sentinels 150 ms away: a client that lost
  // its primary spends its reconnections asking them, and the failover detector of its broken
  // connection hears +switch-master in the middle of one. ioredis 6.0 alone then ends the client
  // for good (every command 'Connection is closed.'): here, nearly every run, some of the ten.
  const own = await startSentinelSet()
  t.teardown(() => own.stop())
  const proxies = await Promise.all(own.sentinels.split(',').map((s) => startRedisProxy(`redis://${s}`, 150)))
  t.teardown(() => Promise.all(proxies.map((p) => p.close())))
  const prefix = `r${randomUUID().slice(0, 8)}:`
  const stores = Array.from({ length: 10 }, () => new RedisStore({ sentinels: proxies.map((p) => new URL(p.url).host), sentinelMaster: own.name, prefix, commandTimeoutMs: 1000 }))
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  // Twenty connections asking Sentinels 150 ms away, on loaded cores: a first ping may outlast 1 s.
  const ready = async (store: RedisStore) => {
    await store.ping()
    return true
  }
  await Promise.all(stores.map((s, i) => until(() => ready(s), `store ${i} to connect`)))
  await own.master.crash()
  const writes = await Promise.all(
    stores.map((store, i) =>
      until(
        async () => {
          await store.connections.setLogLevel(`s${i}`, 'debug')
          return true
        },
        `store ${i} to write again`,
        60
      ).then(
        async () => (await store.connections.getLogLevel(`s${i}`)) === 'debug',
        () => false
      )
    )
  )
  t.same(writes, stores.map(() => true), 'every store writes again')
  // The subscriber connections came through the same failover: a wake-up reaches each store.
  const woken: number[] = []
  for (const [i, store] of stores.entries()) {
    await store.mailbox.enqueueRequest('alice', `q${i}`, { method: 'roots/list' })
    const answer = store.mailbox.awaitAnswer('alice', `q${i}`, new AbortController().signal, 20_000)
    await stores[(i + 1) % stores.length]!.mailbox.completeRequest('alice', `q${i}`, { result: { roots: [] } })
    if (await answer.then(() => true, () => false)) woken.push(i)
  }
  t.same(woken, stores.map((_, i) => i), 'every store hears its answer')
})
