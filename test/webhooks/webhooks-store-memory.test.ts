import t from 'tap'
import { MemoryWebhookStore } from '../../src/webhooks/memory.js'
import { webhookStoreContract } from '../helpers/webhooks-store-contract.js'

webhookStoreContract(t, { create: async () => new MemoryWebhookStore(), peer: async (store) => store })

t.test('memory: a delivery for an unknown webhook is refused, and nothing is logged for it', async (t) => {
  const store = new MemoryWebhookStore()
  t.equal(await store.enqueue({ id: 'm', webhookId: 'wh_none', owner: 'a', body: '{}', attempts: 0, createdAt: 0 }, { maxPending: 1, maxPendingBytes: 10 }), false)
  await store.logAttempt('wh_none', { messageId: 'm', attempt: 1, at: '', status: 'delivered', durationMs: 0 }, 5)
  t.same(await store.attempts('wh_none'), [])
  t.same(await store.drain('wh_none'), [])
})
