import t from 'tap'
import { MemoryRelay, type RoundRelay } from '../../src/gateway/relay.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import { relayContract } from '../helpers/relay-contract.js'
import { startRedis } from '../helpers/redis-server.js'

t.test('MemoryRelay', async (t) => {
  relayContract(t, {
    async create() {
      const r = new MemoryRelay()
      return { a: r, b: r }
    }
  })
})

t.test('the memory store\'s companion is a MemoryRelay', async (t) => {
  t.ok((await new MemoryStore().companions.roundRelay!()) instanceof MemoryRelay)
})

t.test('RedisRelay, as two RedisStores on one Redis make it (their roundRelay companion)', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  relayContract(t, {
    async create(t) {
      const stores = [0, 1].map(() => new RedisStore({ url: redis.url, prefix: 'relay:' }))
      const [a, b] = (await Promise.all(stores.map((s) => s.companions.roundRelay!()))) as (RoundRelay & { close(): Promise<void> })[]
      t.teardown(async () => {
        await Promise.all([a!.close(), b!.close()])
        await Promise.all(stores.map((s) => s.close()))
      })
      return { a: a!, b: b! }
    }
  })
})
