import t from 'tap'
import { MemoryStore } from '../../src/store/memory.js'
import { storeContract } from '../helpers/store-contract.js'
import { createStore } from '../../src/store/index.js'

// One process: "another instance" is the store itself.
storeContract(t, {
  create: async (limits) => new MemoryStore(limits),
  peer: async (store) => store
})

t.test('tasks: a read is one frozen copy per version, shared until the task changes', async (t) => {
  const store = new MemoryStore()
  const now = new Date().toISOString()
  const task = { taskId: 't1', status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, inputRequests: { k: { method: 'roots/list' } } }
  await store.tasks.createTask('alice', task)
  const first = (await store.tasks.getTask('alice', 't1'))!
  t.equal(await store.tasks.getTask('alice', 't1'), first, 'the same view for every read')
  t.ok(Object.isFrozen(first) && Object.isFrozen(first.inputRequests) && Object.isFrozen(first.inputRequests!.k), 'frozen all the way down')
  t.not(first, task, 'never the caller’s own object')
  t.same(await store.tasks.answerTask('alice', 't1', { k: { roots: [] } }), ['k'])
  const answered = (await store.tasks.getTask('alice', 't1'))!
  t.not(answered, first, 'an answer makes a new view')
  t.equal(answered.inputRequests, undefined)
  t.same(first.inputRequests, { k: { method: 'roots/list' } }, 'an old view stays as it was')
  await store.tasks.updateTask('alice', 't1', { status: 'completed', result: { content: [] } })
  t.equal((await store.tasks.getTask('alice', 't1'))!.status, 'completed', 'an update makes a new view')
})

t.test('notifications, all connections: past maxNotificationBytesTotal the largest queues lose their oldest, others nothing', async (t) => {
  const note = (who: string, i: number) => ({ method: 'notifications/message', params: { level: 'info', data: `${who}-${String(i).padStart(4, '0')}-${'x'.repeat(60)}` } })
  const size = JSON.stringify(note('hog', 0)).length
  const store = new MemoryStore({ maxNotificationBytesTotal: 100 * size, notificationBatch: 1000 })
  const all = async (owner: string) => {
    const group = await store.mailbox.takeNotifications(owner)
    if (group === undefined) return []
    await store.mailbox.ackNotifications(owner, group.id)
    return group.notifications.map((n) => String((n.params as { data: string }).data).slice(0, 8))
  }
  for (let i = 0; i < 10; i++) await store.mailbox.pushNotification('alice', note('ali', i))
  for (let i = 0; i < 10; i++) await store.mailbox.pushNotification('bob', note('bob', i))
  for (let i = 0; i < 80; i++) await store.mailbox.pushNotification('hog', note('hog', i))
  t.equal((await store.mailbox.takeNotifications('carol')), undefined, 'at the bound exactly: nothing lost yet')
  await store.mailbox.pushNotification('alice', note('ali', 10))
  // 101 held, bound 100: down to 90, all from the hog (80 -> 69).
  const hog = await all('hog')
  t.equal(hog.length, 69, 'the largest queue gave up what was needed to get 10% below the bound')
  t.equal(hog[0], 'hog-0011', 'its oldest went first')
  t.same(await all('alice'), Array.from({ length: 11 }, (_, i) => `ali-${String(i).padStart(4, '0')}`), 'a client within its share lost nothing')
  t.equal((await all('bob')).length, 10)

  // Handed out but not acknowledged still counts; acknowledged frees it.
  for (let i = 0; i < 60; i++) await store.mailbox.pushNotification('bob', note('bob', i))
  const held = (await store.mailbox.takeNotifications('bob'))!
  t.equal(held.notifications.length, 60)
  for (let i = 0; i < 45; i++) await store.mailbox.pushNotification('alice', note('ali', i))
  const alice = await all('alice')
  t.ok(alice.length < 45, `alice, now the largest queue, lost her oldest (${alice.length} left): bob's 60 handed out are counted and cannot be taken back`)
  t.same((await store.mailbox.takeNotifications('bob'))!.id, held.id, 'the group handed out is intact')
  await store.mailbox.ackNotifications('bob', held.id)
  for (let i = 0; i < 80; i++) await store.mailbox.pushNotification('alice', note('ali', i))
  t.equal((await all('alice')).length, 80, 'after the acknowledgement there is room again')
})

t.test('notifications, all connections: a broadcast past the bound levels the queues once', async (t) => {
  const note = { method: 'notifications/message', params: { data: 'y'.repeat(100) } }
  const size = JSON.stringify(note).length
  const store = new MemoryStore({ maxNotificationBytesTotal: 40 * size, notificationBatch: 1000 })
  for (let i = 0; i < 30; i++) await store.mailbox.pushNotification('big', note)
  for (const who of ['a', 'b', 'c', 'd', 'e']) await store.mailbox.pushNotification(who, note)
  await store.mailbox.broadcast(note)
  const counts: Record<string, number> = {}
  for (const who of ['big', 'a', 'b', 'c', 'd', 'e']) counts[who] = (await store.mailbox.takeNotifications(who))!.notifications.length
  t.same(counts, { big: 26, a: 2, b: 2, c: 2, d: 2, e: 2 }, '41 held, bound 40: only the largest queue lost, down to 90% of the bound (36)')
})

t.test('MCP_STORE_MAX_NOTIFICATION_BYTES_TOTAL sets the bound over all connections', async (t) => {
  const store = createStore({ MCP_STORE_MAX_NOTIFICATION_BYTES_TOTAL: 4096 }) as MemoryStore
  t.equal(store.limits.maxNotificationBytesTotal, 4096)
  t.equal(new MemoryStore().limits.maxNotificationBytesTotal, 256 * 1024 * 1024, 'default 256 MiB')
})

t.test("tasks: one of an owner's tasks expired leaves the others; the last one expired, the owner counts from nothing", async (t) => {
  const store = new MemoryStore({ maxTasksPerPrincipal: 2 })
  const task = (taskId: string, ttlMs: number) => {
    const now = new Date().toISOString()
    return { taskId, status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs, pollIntervalMs: 1000 }
  }
  const expired = () => new Promise((resolve) => setTimeout(resolve, 20))
  await store.tasks.createTask('alice', task('short', 1))
  await store.tasks.createTask('alice', task('long', 60_000))
  await expired()
  t.equal(await store.tasks.getTask('alice', 'short'), undefined, 'expired')
  t.equal((await store.tasks.getTask('alice', 'long'))?.taskId, 'long', 'the other stays')
  await store.tasks.createTask('alice', task('third', 60_000))
  await t.rejects(store.tasks.createTask('alice', task('fourth', 60_000)), { name: 'QuotaExceeded' }, 'the expired one counts no more, the others do')
  await store.tasks.createTask('bob', task('b', 1))
  await expired()
  t.equal(await store.tasks.getTask('bob', 'b'), undefined, "bob's only task expired")
  await store.tasks.createTask('bob', task('b1', 60_000))
  await store.tasks.createTask('bob', task('b2', 60_000))
  await t.rejects(store.tasks.createTask('bob', task('b3', 60_000)), { name: 'QuotaExceeded' }, 'his quota counts from nothing again')
})

t.test('a feature that needs a companion the store does not provide stops at start, naming both', async (t) => {
  const { companion } = await import('../../src/store/compose.js')
  const { ConfigurationError } = await import('../../src/errors.js')
  class NoWebhooksStore extends MemoryStore {
    override readonly companions = {}
  }
  await t.rejects(companion(new NoWebhooksStore(), 'webhooks', 'Webhooks'), new ConfigurationError('Webhooks needs the store\'s "webhooks" companion, which this store (NoWebhooksStore) does not provide: see docs/backends.md'))
  t.equal((await companion(new MemoryStore(), 'webhooks', 'Webhooks')).constructor.name, 'MemoryWebhookStore')
})
