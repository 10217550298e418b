import t from 'tap'
import { Sender } from '../../src/webhooks/deliver.js'
import { withWebhooks } from '../../src/webhooks/decorate.js'
import { MemoryWebhookStore } from '../../src/webhooks/memory.js'
import { backoff, resolveOptions } from '../../src/webhooks/options.js'
import { WebhookService } from '../../src/webhooks/service.js'
import { webhooksFromConfig } from '../../src/webhooks/config.js'
import { loadConfig } from '../../src/config.js'
import { MemoryStore } from '../../src/store/memory.js'
import type { ServerMessage } from '../../src/store/types.js'
import { startReceiver } from '../helpers/webhook-receiver.js'

const note = { method: 'notifications/message', params: { data: 1 } }
const logs: string[] = []
const log = { warn: (_o: object, msg: string) => void logs.push(msg) }

t.test('a store that fails: the offer queues the message, the worker logs and goes on', async (t) => {
  const broken = new MemoryWebhookStore()
  broken.webhooks = async () => {
    throw new Error('down')
  }
  broken.claim = async () => {
    throw new Error('down')
  }
  broken.owners = async () => {
    throw new Error('down')
  }
  const queue = new MemoryStore()
  const service = new WebhookService(broken, queue.mailbox, { pollMs: 10 }, log)
  const store = withWebhooks(queue, service)
  await store.mailbox.pushNotification('alice', note)
  const group = await queue.mailbox.takeNotifications('alice')
  t.same(group?.notifications, [note], 'queued after all')
  await queue.mailbox.ackNotifications('alice', group!.id)
  await queue.connections.setLogLevel('bob', 'info')
  const changed = { method: 'notifications/tools/list_changed' }
  await store.mailbox.broadcast(changed, new Set(['bob']))
  t.same((await queue.mailbox.takeNotifications('alice'))?.notifications, [changed], 'a broadcast is queued after all')
  t.equal(await queue.mailbox.takeNotifications('bob'), undefined, 'but not for a connection the caller excepted')
  t.ok(logs.includes('webhooks: could not offer a broadcast; it is queued instead'))
  t.equal((store as MemoryStore).limits, queue.limits, 'everything else is the store\'s own')
  t.equal(store.mailbox.takeNotifications, store.mailbox.takeNotifications, 'bound once')
  service.start()
  for (let i = 0; i < 500 && !logs.includes('webhooks: could not claim deliveries'); i++) await new Promise((resolve) => setTimeout(resolve, 5))
  await service.stop()
  t.ok(logs.includes('webhooks: could not offer a notification; it is queued instead'))
  t.ok(logs.includes('webhooks: could not claim deliveries'))
})

t.test('a delivery whose webhook went away or was disabled goes back to the queue', async (t) => {
  const store = new MemoryWebhookStore()
  const queued: [string, ServerMessage][] = []
  const queue = { pushNotification: async (owner: string, n: ServerMessage) => void queued.push([owner, n]) }
  const service = new WebhookService(store, queue, { pollMs: 10, concurrency: 1 }, log)
  const hook = { id: 'wh_a', owner: 'alice', url: 'https://hooks.example/x', createdAt: '', secret: 'whsec_AAAA', status: 'active' as const, consecutiveFailures: 0 }
  await store.addWebhook(hook, 5)
  await store.enqueue({ id: 'msg_1', webhookId: 'wh_a', owner: 'alice', body: JSON.stringify({ jsonrpc: '2.0', ...note }), attempts: 0, createdAt: 0 }, { maxPending: 5, maxPendingBytes: 1000 })
  await store.settle('alice', 'wh_a', false, 0, 'off')
  let missing = true
  const real = store.webhook.bind(store)
  store.webhook = async (owner, id) => (missing ? ((missing = false), undefined) : real(owner, id))
  await store.enqueue({ id: 'msg_2', webhookId: 'wh_a', owner: 'alice', body: JSON.stringify({ jsonrpc: '2.0', ...note }), attempts: 0, createdAt: 0 }, { maxPending: 5, maxPendingBytes: 1000 })
  service.start()
  for (let i = 0; i < 500 && queued.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5))
  await service.stop()
  t.same(queued, [['alice', note], ['alice', note]])
})

t.test('many at once: more than the worker takes in one look, all delivered', async (t) => {
  const rx = await startReceiver((n) => (n === 0 ? { status: 200, body: 'x'.repeat(64 * 1024) } : 204))
  t.teardown(() => rx.close())
  const store = new MemoryWebhookStore()
  const service = new WebhookService(store, new MemoryStore().mailbox, { allowedHosts: [`127.0.0.1:${rx.port}`], concurrency: 2, pollMs: 10 }, log)
  service.start()
  t.teardown(() => service.stop())
  await service.register('alice', { url: rx.url })
  for (let i = 0; i < 10; i++) t.equal(await service.offer('alice', note), true)
  t.equal((await rx.waitFor(10)).length, 10)
})

t.test('an attempt that takes too long fails with a clear reason', async (t) => {
  const rx = await startReceiver(() => 'hang')
  t.teardown(() => rx.close())
  const sender = new Sender([`127.0.0.1:${rx.port}`], 100)
  t.teardown(() => sender.close())
  t.match(await sender.send(rx.url, 'whsec_AAAA', 'msg_1', '{}'), { ok: false, error: 'The receiver did not answer in time' })
})

t.test('options: defaults, backoff, and the configuration', async (t) => {
  const o = resolveOptions({ timeoutMs: 2000, allowedHosts: ['Local:8080'] })
  t.match(o, { attempts: 6, backoffMs: 1000, leaseMs: 7000, allowedHosts: ['local:8080'] })
  t.same([1, 2, 3, 10].map((n) => backoff(o, n, 0)), [500, 1000, 2000, 30_000], 'half of it fixed, capped')
  t.equal(backoff(o, 1, 1), 1000)
  t.equal(webhooksFromConfig(loadConfig({ MCP_WEBHOOKS: 'off' })), false)
  t.match(webhooksFromConfig(loadConfig({})), { allowedHosts: [], attempts: 6 })
  t.match(webhooksFromConfig(loadConfig({ MCP_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1:8080, hooks.local', MCP_WEBHOOK_LEASE_MS: '3000' })), {
    allowedHosts: ['127.0.0.1:8080', 'hooks.local'],
    leaseMs: 3000
  })
  t.throws(() => loadConfig({ MCP_WEBHOOK_ATTEMPTS: '0' }), { message: /MCP_WEBHOOK_ATTEMPTS/ })
})

t.test('a worker not started, or stopped, takes nothing: an offer only queues the delivery', async (t) => {
  const rx = await startReceiver()
  t.teardown(() => rx.close())
  const store = new MemoryWebhookStore()
  let claims = 0
  const claim = store.claim.bind(store)
  store.claim = async (...args) => ((claims++, claim(...args)))
  const service = new WebhookService(store, new MemoryStore().mailbox, { allowedHosts: [`127.0.0.1:${rx.port}`], pollMs: 60_000 }, log)
  await service.register('alice', { url: rx.url })
  t.equal(await service.offer('alice', note), true)
  t.equal(claims, 0, 'before start')
  service.start()
  t.equal(claims, 1, 'start looks at once')
  await rx.waitFor(1)
  await service.stop()
  claims = 0
  const later = { method: 'notifications/message', params: { data: 'later' } }
  t.equal(await service.offer('alice', later), true)
  t.equal(claims, 0, 'after stop')
  t.match(await store.claim(Date.now(), 1000, 10), [{ body: /"later"/ }], 'still pending, for the next start')
  t.equal(rx.got.length, 1)
})

t.test('stop waits for a look at the store still under way', async (t) => {
  const store = new MemoryWebhookStore()
  let release!: () => void
  let looked = false
  store.claim = async () => {
    await new Promise<void>((resolve) => (release = resolve))
    looked = true
    return []
  }
  const service = new WebhookService(store, new MemoryStore().mailbox, { pollMs: 60_000 }, log)
  service.start()
  const stopped = service.stop().then(() => looked)
  await new Promise((resolve) => setTimeout(resolve, 20))
  release()
  t.equal(await stopped, true, 'stop resolved only after the claim it was waiting on')
})
