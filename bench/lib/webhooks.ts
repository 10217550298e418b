import { once } from 'node:events'
import { createServer } from 'node:http'
import { Redis } from 'ioredis'
import type { ServerMessage } from '../../src/store/types.js'
import { MemoryWebhookStore } from '../../src/webhooks/memory.js'
import { RedisWebhookStore } from '../../src/webhooks/redis.js'
import { WebhookService } from '../../src/webhooks/service.js'
import type { WebhookStore } from '../../src/webhooks/types.js'

/** Deliveries per second of one instance to a receiver on loopback, memory and Redis stores. */
export interface WebhookBench {
  messages: number
  memoryPerSec: number
  redisPerSec?: number
}

const silent = { warn() {} }

/**
 * Offer `messages` notifications to one webhook and time them until the receiver (a plain Node
 * server in this process, answering 204) has every one: signing, the store's enqueue, claim and
 * finish, and the HTTP POST, with the default concurrency (16 in flight).
 */
async function deliveriesPerSecond(store: WebhookStore, messages: number): Promise<number> {
  let got = 0
  let done = () => {}
  const all = new Promise<void>((resolve) => (done = resolve))
  const receiver = createServer((req, res) => {
    req.resume().on('end', () => {
      res.writeHead(204).end()
      if (++got === messages) done()
    })
  })
  receiver.listen(0, '127.0.0.1')
  await once(receiver, 'listening')
  const host = `127.0.0.1:${(receiver.address() as { port: number }).port}`
  const queue = { pushNotification: async (_owner: string, _n: ServerMessage) => {} }
  const service = new WebhookService(store, queue, { allowedHosts: [host], maxPending: messages, maxPendingBytes: 64 * 1024 * 1024 }, silent)
  service.start()
  try {
    await service.register('bench', { url: `http://${host}/hook` })
    const note = { method: 'notifications/progress', params: { progressToken: 'bench', progress: 1, total: messages } }
    const start = performance.now()
    for (let i = 0; i < messages; i++) await service.offer('bench', note)
    await all
    return Math.round((messages / (performance.now() - start)) * 1000)
  } finally {
    await service.stop()
    receiver.close()
  }
}

export async function webhookBench(redisUrl: string | undefined, messages = 5000): Promise<WebhookBench> {
  const out: WebhookBench = { messages, memoryPerSec: await deliveriesPerSecond(new MemoryWebhookStore(), messages) }
  if (redisUrl !== undefined) {
    const redis = new Redis(redisUrl)
    try {
      out.redisPerSec = await deliveriesPerSecond(new RedisWebhookStore(redis, `bench${Date.now()}:`), messages)
    } finally {
      await redis.quit()
    }
  }
  return out
}
