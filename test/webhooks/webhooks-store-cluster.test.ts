import t from 'tap'
import { randomUUID } from 'node:crypto'
import { Cluster } from 'ioredis'
import { RedisWebhookStore } from '../../src/webhooks/redis.js'
import { webhookStoreContract } from '../helpers/webhooks-store-contract.js'
import { startRedisCluster } from '../helpers/redis-cluster.js'

// The webhook store's scripts on a real Redis Cluster (3 masters, 3 replicas): each must touch the
// keys of one slot only, or the cluster refuses it (CROSSSLOT). Without redis-server this fails.
const cluster = await startRedisCluster()
t.teardown(() => cluster.stop())
const clients: Cluster[] = []
t.teardown(() => Promise.all(clients.map((c) => c.quit())))
const client = () => {
  const c = new Cluster(cluster.seeds.split(',').map((s) => ({ host: s.split(':')[0]!, port: Number(s.split(':')[1]) })))
  clients.push(c)
  return c
}

t.test('the webhook store contract, on Redis Cluster', async (t) => {
  webhookStoreContract(t, {
    create: async () => new RedisWebhookStore(client(), `c${randomUUID().slice(0, 8)}:`),
    peer: async (store) => new RedisWebhookStore(client(), (store as RedisWebhookStore).prefix)
  })
})
