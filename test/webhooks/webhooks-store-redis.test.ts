import t from 'tap'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { RedisWebhookStore } from '../../src/webhooks/redis.js'
import { webhookStoreContract } from '../helpers/webhooks-store-contract.js'
import { startRedis } from '../helpers/redis-server.js'

// A real redis-server, started here and stopped at the end; without one this fails (never skips).
const redis = await startRedis()
t.teardown(() => redis.stop())
const clients: Redis[] = []
t.teardown(() => Promise.all(clients.map((c) => c.quit())))
const client = () => {
  const c = new Redis(redis.url)
  clients.push(c)
  return c
}

t.test('the contract', async (t) => {
  webhookStoreContract(t, {
    // Each store its own prefix, as several servers sharing one Redis would have.
    create: async () => new RedisWebhookStore(client(), `t${randomUUID().slice(0, 8)}:`),
    peer: async (store) => new RedisWebhookStore(client(), (store as RedisWebhookStore).prefix)
  })
})

t.test('every key is under the prefix and hash-tagged, so each script stays in one cluster slot', async (t) => {
  const prefix = `k${randomUUID().slice(0, 8)}:`
  const store = new RedisWebhookStore(client(), prefix)
  const hook = { id: 'wh_1', owner: 'alice', url: 'https://h.example', createdAt: new Date().toISOString(), secret: 'whsec_AAAA', status: 'active' as const, consecutiveFailures: 0 }
  await store.addWebhook(hook, 5)
  await store.enqueue({ id: 'msg_1', webhookId: 'wh_1', owner: 'alice', body: '{}', attempts: 0, createdAt: 1 }, { maxPending: 5, maxPendingBytes: 100 })
  await store.claim(1, 1000, 5)
  await store.logAttempt('wh_1', { messageId: 'msg_1', attempt: 1, at: '', status: 'retrying', durationMs: 1 }, 5)
  const keys = await client().keys(`${prefix}*`)
  t.same(keys.map((k) => k.slice(prefix.length).replace(/^\{who:[0-9a-f]{40}\}/, '{who:<sha1>}')).sort(), [
    '{wh:wh_1}:bytes',
    '{wh:wh_1}:due',
    '{wh:wh_1}:leases',
    '{wh:wh_1}:log',
    '{wh:wh_1}:msgs',
    '{wh}:gen',
    '{wh}:owners',
    '{wh}:sched',
    '{who:<sha1>}:hooks'
  ].sort())
  await store.removeWebhook('alice', 'wh_1')
  t.same(await client().keys(`${prefix}*`), [], 'a removed webhook leaves nothing')
})
