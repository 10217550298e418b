import t from 'tap'
import { randomUUID } from 'node:crypto'
import { RedisStore, type RedisStoreOptions } from '../src/store/redis.js'
import { loadConfig } from '../src/config.js'
import { createStore } from '../src/store/index.js'
import { storeContract } from './store-contract.js'
import { startSentinelSet } from './redis-sentinel.js'

// A primary, its replica and three Sentinels, started once for this file.
const set = await startSentinelSet()
t.teardown(() => set.stop())

const prefixes = new WeakMap<RedisStore, string>()
const open = (options: Partial<RedisStoreOptions> = {}) =>
  new RedisStore({ sentinels: set.sentinels.split(','), sentinelMaster: set.name, ...options })

t.test('the contract, under Sentinel', async (t) => {
  storeContract(t, {
    create: async (limits) => {
      const prefix = `t${randomUUID().slice(0, 8)}:`
      const store = open({ prefix, limits })
      prefixes.set(store, prefix)
      return store
    },
    peer: async (store) => {
      const s = store as RedisStore
      const peer = open({ prefix: prefixes.get(s)!, limits: s.limits })
      prefixes.set(peer, prefixes.get(s)!)
      await peer.ping()
      return peer
    }
  })
})

t.test('createStore: MCP_REDIS_SENTINELS and MCP_REDIS_SENTINEL_MASTER', async (t) => {
  const store = createStore(loadConfig({ MCP_REDIS_SENTINELS: set.sentinels, MCP_REDIS_SENTINEL_MASTER: set.name, MCP_REDIS_PREFIX: `e${randomUUID().slice(0, 8)}:` }))
  t.teardown(() => store.close())
  t.ok(store instanceof RedisStore)
  await store.ping()
  await store.setLogLevel('alice', 'debug')
  t.equal(await store.getLogLevel('alice'), 'debug')
})
