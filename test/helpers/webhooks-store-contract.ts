import type { Test } from 'tap'
import type { PendingDelivery, WebhookRecord, WebhookStore } from '../../src/webhooks/types.js'

/** Fresh stores, and another instance over the same state (memory: the store itself). */
export interface WebhookStoreFactory {
  create(): Promise<WebhookStore>
  peer(store: WebhookStore): Promise<WebhookStore>
}

let n = 0
const hook = (owner: string, extra: Partial<WebhookRecord> = {}): WebhookRecord => ({
  id: `wh_${++n}`,
  owner,
  url: 'https://hooks.example/x',
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
  secret: 'whsec_AAAA',
  status: 'active',
  consecutiveFailures: 0,
  ...extra
})
const delivery = (h: WebhookRecord, body = '{"jsonrpc":"2.0","method":"notifications/x"}', createdAt = 1000): PendingDelivery => ({
  id: `msg_${++n}`,
  webhookId: h.id,
  owner: h.owner,
  body,
  attempts: 0,
  createdAt
})
const roomy = { maxPending: 100, maxPendingBytes: 1 << 20 }

/** The WebhookStore contract (src/webhooks/types.ts), run against every implementation. */
export function webhookStoreContract(t: Test, factory: WebhookStoreFactory): void {
  const make = async (t: Test) => {
    const store = await factory.create()
    t.teardown(() => store.close())
    return store
  }

  t.test('webhooks belong to their owner, bounded per owner', async (t) => {
    const store = await make(t)
    const a1 = hook('alice', { events: ['notifications/progress'] })
    const a2 = hook('alice', { createdAt: a1.createdAt })
    t.equal(await store.addWebhook(a1, 2), true)
    t.equal(await store.addWebhook(a2, 2), true)
    t.equal(await store.addWebhook(hook('alice'), 2), false, 'the limit')
    t.equal(await store.addWebhook(hook('bob'), 2), true, 'per owner')
    t.same(await store.webhooks('alice'), [a1, a2])
    t.same(await store.webhook('alice', a1.id), a1)
    t.equal(await store.webhook('bob', a1.id), undefined, 'another owner\'s is unknown')
    t.equal(await store.removeWebhook('bob', a1.id), undefined)
    await store.enqueue(delivery(a1), roomy)
    const removed = await store.removeWebhook('alice', a1.id)
    t.equal(removed?.length, 1, 'removal hands back what was pending')
    t.same(await store.webhooks('alice'), [a2])
    t.equal(await store.removeWebhook('alice', a1.id), undefined)
    t.same(await store.attempts(a1.id), [])
    t.same(await (await factory.peer(store)).webhooks('alice'), [a2], 'every instance sees them')
    t.same((await (await factory.peer(store)).owners()).sort(), ['alice', 'bob'], 'the owners with a webhook, each once')
    await store.removeWebhook('alice', a2.id)
    t.same(await store.owners(), ['bob'], 'alice has none left')
  })

  t.test('settle: failures in a row disable, a success resets', async (t) => {
    const store = await make(t)
    const h = hook('alice')
    await store.addWebhook(h, 5)
    t.match(await store.settle('alice', h.id, false, 2, 'too many'), { status: 'active', consecutiveFailures: 1 })
    t.match(await store.settle('alice', h.id, true, 2, ''), { status: 'active', consecutiveFailures: 0 })
    t.match(await store.settle('alice', h.id, true, 2, ''), { status: 'active', consecutiveFailures: 0 })
    await store.settle('alice', h.id, false, 2, 'too many')
    const off = await store.settle('alice', h.id, false, 2, 'too many')
    t.match(off, { status: 'disabled', consecutiveFailures: 2, disabledReason: 'too many', disabledAt: String })
    t.match(await store.settle('alice', h.id, false, 0, 'gone'), { disabledReason: 'too many' }, 'disabled once, for the first reason')
    t.match(await store.webhook('alice', h.id), { status: 'disabled', disabledReason: 'too many' })
    const g = hook('alice')
    await store.addWebhook(g, 5)
    t.match(await store.settle('alice', g.id, false, 0, 'gone'), { status: 'disabled', disabledReason: 'gone' }, '0: at once')
    t.equal(await store.settle('bob', g.id, true, 1, ''), undefined)
  })

  t.test('pending deliveries: bounded by count and bytes', async (t) => {
    const store = await make(t)
    const h = hook('alice')
    await store.addWebhook(h, 5)
    const limits = { maxPending: 2, maxPendingBytes: 100 }
    t.equal(await store.enqueue(delivery(h, 'x'.repeat(60)), limits), true)
    t.equal(await store.enqueue(delivery(h, 'x'.repeat(41)), limits), false, 'bytes')
    t.equal(await store.enqueue(delivery(h, 'x'.repeat(40)), limits), true)
    t.equal(await store.enqueue(delivery(h, 'x'), limits), false, 'count')
    const [first] = await store.claim(2000, 10_000, 1)
    t.equal(await store.finish(first!), true)
    t.equal(await store.enqueue(delivery(h, 'x'.repeat(40)), limits), true, 'room again')
    t.equal((await store.drain(h.id)).length, 2)
    t.same(await store.drain(h.id), [])
    t.equal(await store.enqueue(delivery(h, 'x'.repeat(100)), limits), true, 'drained: empty again')
  })

  t.test('claims are leased: one holder at a time, again after the lease, settled only by the holder', async (t) => {
    const store = await make(t)
    const peer = await factory.peer(store)
    const h = hook('alice')
    const g = hook('bob')
    await store.addWebhook(h, 5)
    await store.addWebhook(g, 5)
    const d1 = delivery(h, 'one', 1000)
    const d2 = delivery(g, 'two', 1000)
    const d3 = delivery(h, 'three', 5000)
    for (const d of [d1, d2, d3]) await store.enqueue(d, roomy)
    t.same(await store.claim(999, 100, 10), [], 'nothing due yet')
    const [a, b] = await Promise.all([store.claim(1000, 100, 10), peer.claim(1000, 100, 10)])
    const claimed = [...a, ...b]
    t.same(claimed.map((c) => c.body).sort(), ['one', 'two'], 'each due message once, across instances')
    t.same(await store.claim(1050, 100, 10), [], 'leased')
    const again = await peer.claim(1100, 100, 1)
    t.equal(again.length, 1, 'the lease ended: due again, bounded by max')
    const old = claimed.find((c) => c.id === again[0]!.id)!
    t.not(old.lease, again[0]!.lease)
    t.equal(await store.finish(old), false, 'the old lease settles nothing')
    t.equal(await store.retry(old, 2000), false)
    const d = again[0]!
    t.equal(await store.retry({ ...d, attempts: 1 }, 3000), true)
    t.equal(await store.retry(d, 3000), false, 'given back: the lease is gone')
    const rest = await store.claim(1100, 5000, 10)
    t.equal(rest.length, 1, 'the other one')
    const later = await store.claim(3000, 100, 10)
    t.same(later.map((c) => [c.id, c.attempts]), [[d.id, 1]], 'retried: due at its time, with its attempts')
    t.equal(await store.finish(later[0]!), true)
    t.equal(await store.finish(later[0]!), false)
    t.same((await store.claim(6000, 1000, 10)).map((c) => c.body), ['three'])
    t.same((await store.claim(6100, 100, 10)).map((c) => c.body), [rest[0]!.body], 'the other one, once its lease ended')
  })

  t.test('attempts: the newest first, the newest `keep`', async (t) => {
    const store = await make(t)
    const h = hook('alice')
    await store.addWebhook(h, 5)
    for (let i = 1; i <= 4; i++) {
      await store.logAttempt(h.id, { messageId: 'msg_1', attempt: i, at: new Date().toISOString(), status: 'retrying', durationMs: i }, 3)
    }
    t.same((await store.attempts(h.id)).map((a) => a.attempt), [4, 3, 2])
  })
}
