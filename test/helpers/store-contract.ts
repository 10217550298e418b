import type { Test } from 'tap'
import { wireErrorOf } from '../../src/errors.js'
import { companion } from '../../src/store/compose.js'
import { AnswerTimeout, StoreLimitError } from '../../src/store/store-errors.js'
import type { Store, StoreLimits, TaskRecord } from '../../src/store/types.js'

/**
 * How the contract suite gets stores: `create` makes a fresh, empty one; `peer` another instance
 * over the same state (for Redis a second client with the same prefix, as another server process
 * would have; for memory the store itself).
 */
export interface StoreFactory {
  create(limits?: Partial<StoreLimits>): Promise<Store>
  peer(store: Store): Promise<Store>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A store refuses with a {@link StoreLimitError} of the given code, which the core maps to the wire
 * error `wire` (status, JSON-RPC code, message, headers).
 */
export async function rejectsWithLimit(t: Test, p: Promise<unknown>, code: string, wire: object, message = 'a store limit error'): Promise<void> {
  const err = await p.then(() => undefined, (e: unknown) => e)
  t.ok(err instanceof StoreLimitError, message)
  t.match(err, { code }, message)
  t.match(wireErrorOf(err), wire, message)
}

/** Poll `check` until it holds (bounded: 2 s). */
async function eventually(check: () => boolean | Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return true
    await sleep(10)
  }
  return false
}

/** The task an update resolved: a task whose creator asked for notifications comes back whole. */
function updated(t: Test, value: TaskRecord | true | undefined): TaskRecord | undefined {
  if (value === true) t.fail('a task with notify: true comes back from updateTask')
  return value === true ? undefined : value
}

function task(taskId: string, extra: Partial<TaskRecord> = {}): TaskRecord {
  const now = new Date().toISOString()
  return { taskId, status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, ...extra }
}

/**
 * The storage contract (`src/store/types.ts`), run against every implementation: what one store
 * does, the other must do too.
 */
export function storeContract(t: Test, factory: StoreFactory): void {
  const make = async (t: Test, limits: Partial<StoreLimits> = {}) => {
    const store = await factory.create(limits)
    t.teardown(() => store.close())
    return store
  }
  const peerOf = async (t: Test, store: Store) => {
    const peer = await factory.peer(store)
    if (peer !== store) t.teardown(() => peer.close())
    return peer
  }

  t.test('connection state: log level, legacy client, per owner', async (t) => {
    const store = await make(t)
    t.equal(await store.connections.getLogLevel('alice'), undefined)
    await store.connections.setLogLevel('alice', 'warning')
    t.equal(await store.connections.getLogLevel('alice'), 'warning')
    t.equal(await store.connections.getLogLevel('bob'), undefined, 'another owner sees nothing')
    const client = { protocolVersion: '2025-11-25', capabilities: { elicitation: {}, roots: { listChanged: true } }, clientInfo: { name: 'c', version: '1' } }
    t.equal(await store.connections.getLegacyClient('alice'), undefined)
    await store.connections.setLegacyClient('alice', client)
    t.same(await store.connections.getLegacyClient('alice'), client)
    t.equal(await store.connections.getLegacyClient('bob'), undefined)
    t.equal(await (await peerOf(t, store)).connections.getLogLevel('alice'), 'warning', 'every instance sees it')
    await store.ping()
  })

  t.test('owner ids cannot spell each other\'s keys', async (t) => {
    const store = await make(t)
    await store.tasks.createTask('a:b', task('c'))
    t.equal(await store.tasks.getTask('a', 'b:c'), undefined)
    await store.connections.setLogLevel('x', 'debug')
    t.equal(await store.connections.getLogLevel('x:'), undefined)
    t.equal(await store.connections.getLogLevel(''), undefined)
  })

  t.test('loggers: the connections whose level takes a message, gone with the connection', async (t) => {
    const store = await make(t, { maxConnections: 3 })
    t.same(await store.connections.loggers('emergency'), [], 'none set a level')
    await store.connections.setLogLevel('alice', 'debug')
    await store.connections.setLogLevel('bob', 'warning')
    await store.connections.subscribe('carol', 'x:1')
    t.same((await store.connections.loggers('warning')).sort(), ['alice', 'bob'])
    t.same(await store.connections.loggers('info'), ['alice'], 'below bob\'s level')
    await store.connections.setLogLevel('bob', 'debug')
    t.same((await store.connections.loggers('debug')).sort(), ['alice', 'bob'], 'a level changed')
    await store.connections.setLogLevel('dave', 'error')
    t.same((await store.connections.loggers('error')).sort(), ['bob', 'dave'], 'beyond maxConnections the least recently used is forgotten, with its level')
    t.same((await store.connections.loggers('error')).sort(), ['bob', 'dave'], 'and stays so')
  })

  t.test('subscriptions: per owner, bounded, gone with the connection', async (t) => {
    const store = await make(t, { maxSubscriptions: 2, maxConnections: 2 })
    t.equal(await store.connections.subscribe('alice', 'x:1'), true)
    t.equal(await store.connections.subscribe('alice', 'x:1'), false, 'already subscribed')
    t.equal(await store.connections.subscribe('alice', 'x:2'), true)
    await rejectsWithLimit(t, store.connections.subscribe('alice', 'x:3'), 'ERR_STORE_TOO_MANY_SUBSCRIPTIONS', { status: 400, code: -32602, message: 'Too many subscriptions (limit 2): unsubscribe first' })
    t.same((await store.connections.subscriptions('alice')).sort(), ['x:1', 'x:2'])
    t.same(await store.connections.subscriptions('bob'), [])
    t.equal(await store.connections.unsubscribe('bob', 'x:1'), false, 'bob was not subscribed')
    await store.connections.subscribe('bob', 'x:1')
    t.same((await store.connections.subscribers('x:1')).sort(), ['alice', 'bob'])
    t.equal(await store.connections.unsubscribe('alice', 'x:1'), true)
    t.same(await store.connections.subscribers('x:1'), ['bob'])
    t.same(await store.connections.subscribers('x:9'), [])
    await store.connections.setLogLevel('carol', 'info')
    t.same(await store.connections.subscriptions('alice'), [], 'beyond maxConnections the least recently used connection is forgotten')
    t.same(await store.connections.subscribers('x:2'), [], 'and leaves the subscribers of its URIs')
    t.same(await store.connections.subscribers('x:1'), ['bob'])
  })

  t.test('notifications: groups repeat until acknowledged, then the rest in order', async (t) => {
    const store = await make(t, { notificationBatch: 2 })
    t.equal(await store.mailbox.takeNotifications('alice'), undefined, 'an unknown connection has none')
    t.equal(await store.mailbox.ackNotifications('alice', 'nope'), false)
    const odd = { method: 'n/odd', params: { list: [], obj: {}, text: 'Zoë ☃ "q" \\', n: 1.5, nested: [{}, []] } }
    await store.mailbox.pushNotification('alice', odd)
    await store.mailbox.pushNotification('alice', { method: 'n/2' })
    await store.mailbox.pushNotification('alice', { method: 'n/3' })
    const peer = await peerOf(t, store)
    const g1 = await peer.mailbox.takeNotifications('alice')
    t.same(g1?.notifications, [odd, { method: 'n/2' }], 'JSON comes back as it went in, in order')
    t.type(g1?.id, 'string')
    if (g1?.json !== undefined) t.same(JSON.parse(g1.json), g1.notifications, 'a serialized group says the same')
    t.same(await store.mailbox.takeNotifications('alice'), g1, 'the same group until acknowledged, on any instance')
    t.equal(await store.mailbox.takeNotifications('bob'), undefined, 'bob sees nothing of alice')
    t.equal(await store.mailbox.ackNotifications('bob', g1!.id), false, 'nor can he acknowledge it')
    t.equal(await store.mailbox.ackNotifications('alice', 'other'), false)
    t.equal(await peer.mailbox.ackNotifications('alice', g1!.id), true)
    t.equal(await store.mailbox.ackNotifications('alice', g1!.id), true, 'acknowledging the last group again is harmless')
    const g2 = await store.mailbox.takeNotifications('alice')
    t.not(g2?.id, g1!.id)
    t.same(g2?.notifications, [{ method: 'n/3' }])
    t.equal(await store.mailbox.ackNotifications('alice', g2!.id), true)
    t.equal(await store.mailbox.ackNotifications('alice', g1!.id), false, 'only the last one acknowledged counts')
    t.equal(await store.mailbox.takeNotifications('alice'), undefined, 'drained')
  })

  t.test('notifications: bounded per connection, stale ones dropped', async (t) => {
    // A 1 s TTL: 'new' must still be fresh when it is taken, a call later, on a busy machine too.
    const store = await make(t, { maxNotifications: 3, notificationTtlMs: 1000 })
    for (let i = 1; i <= 5; i++) await store.mailbox.pushNotification('alice', { method: `n/${i}` })
    t.same((await store.mailbox.takeNotifications('alice'))?.notifications.map((n) => n.method), ['n/3', 'n/4', 'n/5'], 'the oldest dropped beyond the limit')
    await store.mailbox.pushNotification('bob', { method: 'old' })
    await sleep(1100)
    await store.mailbox.pushNotification('bob', { method: 'new' })
    t.same((await store.mailbox.takeNotifications('bob'))?.notifications, [{ method: 'new' }], 'older than the TTL: dropped')
    await store.mailbox.pushNotification('carol', { method: 'old' })
    await sleep(1100)
    t.equal(await store.mailbox.takeNotifications('carol'), undefined)
  })

  t.test('notifications: bounded per connection in bytes too; the oldest go', async (t) => {
    const store = await make(t, { maxNotificationBytes: 2048 })
    const big = (i: number) => ({ method: `n/${i}`, params: { text: 'x'.repeat(600) } })
    for (let i = 1; i <= 5; i++) await store.mailbox.pushNotification('alice', big(i))
    t.same((await store.mailbox.takeNotifications('alice'))?.notifications.map((n) => n.method), ['n/3', 'n/4', 'n/5'], 'beyond 2 KiB the oldest were dropped')
    await store.mailbox.pushNotification('bob', { method: 'small' })
    await store.mailbox.pushNotification('bob', { method: 'huge', params: { text: 'y'.repeat(3000) } })
    t.equal(await store.mailbox.takeNotifications('bob'), undefined, 'one larger than the bound alone is not kept, nor what it pushed out')
    await store.mailbox.pushNotification('bob', { method: 'after' })
    await store.mailbox.broadcast({ method: 'b', params: { text: 'z'.repeat(1500) } })
    t.same((await store.mailbox.takeNotifications('bob'))?.notifications.map((n) => n.method), ['after', 'b'], 'the count is right again after a drain')
    t.same((await store.mailbox.takeNotifications('alice'))?.notifications.map((n) => n.method), ['n/3', 'n/4', 'n/5'], 'a group stays until acknowledged')
  })

  t.test('requests: bounded per connection in bytes too', async (t) => {
    const strict = await make(t, { maxRequestBytes: 2048 })
    const ask = (n: number) => ({ method: 'elicitation/create', params: { message: 'q'.repeat(n) } })
    await strict.mailbox.enqueueRequest('alice', 'a', ask(900))
    await strict.mailbox.enqueueRequest('alice', 'b', ask(900))
    await rejectsWithLimit(t, strict.mailbox.enqueueRequest('alice', 'c', ask(900)), 'ERR_STORE_QUEUE_FULL', {
      status: 503,
      message: 'The client\'s request queue is full (2048 bytes waiting): the client is not answering'
    })
    await rejectsWithLimit(t, strict.mailbox.enqueueRequest('bob', 'big', ask(3000)), 'ERR_STORE_QUEUE_FULL', { status: 503 }, 'one larger than the bound alone is refused')
    t.equal(await strict.mailbox.completeRequest('alice', 'a', { result: {} }), true)
    await strict.mailbox.enqueueRequest('alice', 'c', ask(900))
    t.ok(await strict.mailbox.getRequest('alice', 'c'), 'an answer frees its bytes')
    await t.rejects(strict.mailbox.awaitAnswer('alice', 'b', new AbortController().signal, 20), /did not answer/)
    await strict.mailbox.enqueueRequest('alice', 'd', ask(900))
    t.ok(await strict.mailbox.getRequest('alice', 'd'), 'a withdrawn request frees its bytes')

    const lenient = await make(t, { maxRequestBytes: 2048, discardOldestRequests: true })
    await lenient.mailbox.enqueueRequest('alice', 'a', ask(900))
    await lenient.mailbox.enqueueRequest('alice', 'b', ask(900))
    await lenient.mailbox.enqueueRequest('alice', 'c', ask(900))
    t.equal(await lenient.mailbox.getRequest('alice', 'a'), undefined, 'beyond the bytes the oldest active one is discarded')
    t.ok(await lenient.mailbox.getRequest('alice', 'c'))
    await lenient.mailbox.claimRequest('alice')
    await lenient.mailbox.claimRequest('alice')
    await rejectsWithLimit(t, lenient.mailbox.enqueueRequest('alice', 'd', ask(900)), 'ERR_STORE_QUEUE_FULL', { status: 503 }, 'none active to discard: refused')
  })

  t.test('broadcast reaches every connection that exists now, and creates none', async (t) => {
    const store = await make(t)
    await store.connections.setLogLevel('alice', 'info')
    await store.connections.subscribe('bob', 'x:1')
    await store.mailbox.pushNotification('bob', { method: 'first' })
    await store.mailbox.broadcast({ method: 'notifications/tools/list_changed' })
    t.same((await store.mailbox.takeNotifications('alice'))?.notifications, [{ method: 'notifications/tools/list_changed' }])
    t.same((await store.mailbox.takeNotifications('bob'))?.notifications, [{ method: 'first' }, { method: 'notifications/tools/list_changed' }], 'in order')
    t.equal(await store.mailbox.takeNotifications('carol'), undefined, 'carol came later')
    for (const owner of ['alice', 'bob']) await store.mailbox.ackNotifications(owner, (await store.mailbox.takeNotifications(owner))!.id)
    await store.mailbox.broadcast({ method: 'notifications/prompts/list_changed' }, new Set(['alice']))
    t.equal(await store.mailbox.takeNotifications('alice'), undefined, 'except: the webhooks took it for alice')
    t.same((await store.mailbox.takeNotifications('bob'))?.notifications, [{ method: 'notifications/prompts/list_changed' }])
  })

  t.test('requests: handed to one poller once, redelivered after the timeout, completed once', async (t) => {
    const store = await make(t, { redeliveryMs: 150 })
    const peer = await peerOf(t, store)
    t.equal(await store.mailbox.claimRequest('alice'), undefined)
    const ask = { method: 'elicitation/create', params: { message: 'City?', requestedSchema: { type: 'object', properties: {} } } }
    await store.mailbox.enqueueRequest('alice', 'r1', ask)
    await store.mailbox.enqueueRequest('alice', 'r2', { method: 'roots/list' })
    const fresh = await store.mailbox.getRequest('alice', 'r1')
    t.match(fresh, { id: 'r1', request: ask, deliveries: 0 })
    t.type(fresh?.createdAt, 'number')
    t.notOk(fresh && 'deliveredAt' in fresh, 'active: never delivered')
    t.equal(await store.mailbox.getRequest('bob', 'r1'), undefined, 'another owner cannot see it')
    const claims = await Promise.all([store, peer, store, peer, store, peer].map((s) => s.mailbox.claimRequest('alice')))
    const got = claims.filter((c) => c !== undefined).map((c) => c.id)
    t.same(got.sort(), ['r1', 'r2'], 'each request handed out once, however many poll at once')
    const first = claims.find((c) => c?.id === 'r1')!
    t.same([first.request, first.deliveries], [ask, 1])
    t.type(first.deliveredAt, 'number')
    t.equal(await store.mailbox.claimRequest('bob'), undefined)
    await sleep(200)
    const again = await peer.mailbox.claimRequest('alice')
    t.same([again?.id, again?.deliveries], ['r1', 2], 'past the timeout: active again, same id, oldest first')
    t.equal((await store.mailbox.getRequest('alice', 'r1'))?.deliveries, 2)
    t.equal(await store.mailbox.completeRequest('bob', 'r1', { result: {} }), false, 'bob cannot answer it')
    const answers = await Promise.all([store, peer].map((s) => s.mailbox.completeRequest('alice', 'r1', { result: { action: 'accept' } })))
    t.same(answers.sort(), [false, true], 'completed once')
    t.equal(await store.mailbox.getRequest('alice', 'r1'), undefined, 'complete: gone from the queue')
    t.equal(await store.mailbox.completeRequest('alice', 'never', { result: {} }), false)
    t.same(await store.mailbox.awaitAnswer('alice', 'r1', new AbortController().signal, 1000), { result: { action: 'accept' } }, 'an answer before the wait is kept for it')
  })

  t.test('requests: a full queue refuses, or discards the oldest active one', async (t) => {
    const strict = await make(t, { maxRequests: 2 })
    await strict.mailbox.enqueueRequest('alice', 'a', { method: 'roots/list' })
    await strict.mailbox.enqueueRequest('alice', 'b', { method: 'roots/list' })
    await t.rejects(strict.mailbox.enqueueRequest('alice', 'c', { method: 'roots/list' }), { message: 'The client\'s request queue is full (2 waiting): the client is not answering' })
    await rejectsWithLimit(t, strict.mailbox.enqueueRequest('alice', 'c', { method: 'roots/list' }), 'ERR_STORE_QUEUE_FULL', { message: /queue is full/, status: 503, headers: { 'retry-after': '5' } })
    await strict.mailbox.enqueueRequest('bob', 'a', { method: 'roots/list' })

    const lenient = await make(t, { maxRequests: 2, discardOldestRequests: true })
    await lenient.mailbox.enqueueRequest('alice', 'a', { method: 'roots/list' })
    await lenient.mailbox.enqueueRequest('alice', 'b', { method: 'roots/list' })
    t.equal((await lenient.mailbox.claimRequest('alice'))?.id, 'a', 'a is pending now')
    await lenient.mailbox.enqueueRequest('alice', 'c', { method: 'roots/list' })
    t.equal(await lenient.mailbox.getRequest('alice', 'b'), undefined, 'the oldest active one (b) was discarded')
    t.ok(await lenient.mailbox.getRequest('alice', 'a'), 'the pending one stays')
    t.same(await lenient.mailbox.awaitAnswer('alice', 'b', new AbortController().signal, 1000), {
      error: { code: -32603, message: 'Discarded: the request queue was full' }
    })
    t.equal((await lenient.mailbox.claimRequest('alice'))?.id, 'c')
    await rejectsWithLimit(t, lenient.mailbox.enqueueRequest('alice', 'd', { method: 'roots/list' }), 'ERR_STORE_QUEUE_FULL', { message: /queue is full/, status: 503 }, 'none active: refused all the same')
  })

  t.test('awaitAnswer: woken on any instance; aborts and timeouts withdraw the request', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    await store.mailbox.enqueueRequest('alice', 'w1', { method: 'roots/list' })
    const waiting = store.mailbox.awaitAnswer('alice', 'w1', new AbortController().signal, 5000)
    await sleep(30)
    t.equal(await peer.mailbox.completeRequest('alice', 'w1', { error: { code: -1, message: 'no' } }), true)
    t.same(await waiting, { error: { code: -1, message: 'no' } }, 'answered through another instance')

    await store.mailbox.enqueueRequest('alice', 'w2', { method: 'roots/list' })
    const aborted = new AbortController()
    aborted.abort(new Error('gone already'))
    await t.rejects(store.mailbox.awaitAnswer('alice', 'w2', aborted.signal, 1000), /gone already/)
    t.equal(await store.mailbox.getRequest('alice', 'w2'), undefined, 'withdrawn')

    await store.mailbox.enqueueRequest('alice', 'w3', { method: 'roots/list' })
    const later = new AbortController()
    const pending = store.mailbox.awaitAnswer('alice', 'w3', later.signal, 5000)
    await sleep(20)
    later.abort(new Error('cancelled while waiting'))
    await t.rejects(pending, /cancelled while waiting/)
    t.equal(await store.mailbox.getRequest('alice', 'w3'), undefined, 'withdrawn when the wait is abandoned')
    t.equal(await store.mailbox.completeRequest('alice', 'w3', { result: {} }), false, 'and no longer answerable')

    await store.mailbox.enqueueRequest('alice', 'w4', { method: 'roots/list' })
    await t.rejects(store.mailbox.awaitAnswer('alice', 'w4', new AbortController().signal, 80), AnswerTimeout)
    await t.rejects(store.mailbox.awaitAnswer('alice', 'w4', new AbortController().signal, 10), /The client did not answer within 10 ms/)
    t.equal(await store.mailbox.getRequest('alice', 'w4'), undefined, 'withdrawn on timeout')
  })

  t.test('close rejects whoever waits', async (t) => {
    const store = await factory.create()
    await store.mailbox.enqueueRequest('dan', 'r', { method: 'roots/list' })
    const waiting = store.mailbox.awaitAnswer('dan', 'r', new AbortController().signal, 5000)
    await sleep(30)
    const rejected = t.rejects(waiting, /The store is closing/)
    await store.close()
    await rejected
  })

  t.test('cancellation is heard by every instance', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    const heard: string[] = []
    const stop = peer.signals.onCancel((owner, id, reason) => heard.push(`${owner} ${id} ${reason}`))
    await sleep(20)
    await store.signals.publishCancel('alice', 'call-1', 'user hit stop')
    await store.signals.publishCancel('alice', 'call-2', undefined)
    t.ok(await eventually(() => heard.length === 2), 'heard')
    t.same(heard, ['alice call-1 user hit stop', 'alice call-2 undefined'])
    stop()
    await store.signals.publishCancel('alice', 'call-3', 'late')
    await sleep(50)
    t.equal(heard.length, 2, 'not after unsubscribing')
  })

  t.test('resource updates are heard by every instance, the publishing one too', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    const heard: string[] = []
    const stops = [peer.signals.onResourceUpdated((uri) => heard.push(`peer ${uri}`)), store.signals.onResourceUpdated((uri) => heard.push(`self ${uri}`))]
    await sleep(20)
    await store.signals.publishResourceUpdated('demo://readme')
    t.ok(await eventually(() => heard.length === 2), 'heard')
    t.same(heard.sort(), ['peer demo://readme', 'self demo://readme'])
    for (const stop of stops) stop()
    await store.signals.publishResourceUpdated('demo://late')
    await sleep(50)
    t.equal(heard.length, 2, 'not after unsubscribing')
  })

  t.test('tasks: durable, per owner, updated until terminal', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    const created = task('t1', { statusMessage: 'starting', notify: true })
    await store.tasks.createTask('alice', created)
    t.same(await peer.tasks.getTask('alice', 't1'), created, 'readable on any instance once created')
    t.equal(await store.tasks.getTask('bob', 't1'), undefined, 'another owner\'s task is unknown')
    t.equal(await store.tasks.updateTask('bob', 't1', { status: 'failed' }), undefined)
    const before = created.lastUpdatedAt
    await sleep(5)
    const changed = updated(t, await peer.tasks.updateTask('alice', 't1', { statusMessage: undefined, pollIntervalMs: 500 }))
    t.equal(changed?.pollIntervalMs, 500)
    t.notOk(changed && 'statusMessage' in changed, 'undefined in a patch removes the field')
    t.not(changed?.lastUpdatedAt, before, 'lastUpdatedAt is stamped')
    t.same(await store.tasks.getTask('alice', 't1'), changed)
    const result = { content: [], structuredContent: {}, isError: false }
    const done = updated(t, await store.tasks.updateTask('alice', 't1', { status: 'completed', result }))
    t.same([done?.status, done?.result], ['completed', result], 'empty arrays and objects survive')
    // JSON from an upstream or a client may carry an own `__proto__` key: kept as a key, never made a prototype.
    const odd = JSON.parse('{"content":[],"structuredContent":{"__proto__":{"x":1},"a":[{"__proto__":null}]}}') as Record<string, unknown>
    await store.tasks.createTask('alice', task('proto'))
    await store.tasks.updateTask('alice', 'proto', { status: 'completed', result: odd })
    const kept = (await peer.tasks.getTask('alice', 'proto'))?.result as { structuredContent: object } | undefined
    t.equal(JSON.stringify(kept), JSON.stringify(odd), 'an own __proto__ key survives as a key')
    t.equal(Object.getPrototypeOf(kept?.structuredContent), Object.prototype, 'and is no prototype')
    t.equal(await peer.tasks.updateTask('alice', 't1', { status: 'cancelled' }), undefined, 'a completed task cannot be cancelled')
    t.equal((await store.tasks.getTask('alice', 't1'))?.status, 'completed')
    await store.tasks.createTask('alice', task('t2'))
    t.equal(await store.tasks.updateTask('alice', 't2', { statusMessage: 'halfway' }), true, 'no notify: true, nothing read back')
    t.equal((await peer.tasks.getTask('alice', 't2'))?.statusMessage, 'halfway', 'but changed all the same')
    t.equal(await store.tasks.updateTask('alice', 't2', { status: 'cancelled' }), true)
    t.equal(await store.tasks.updateTask('alice', 't2', { status: 'completed', result: {} }), undefined, 'a cancelled task cannot complete')
    t.equal(await store.tasks.updateTask('alice', 'nope', { status: 'failed' }), undefined)
    await store.tasks.createTask('alice', task('t3', { status: 'failed', error: { code: -1, message: 'x', data: [1] } }))
    t.same((await store.tasks.getTask('alice', 't3'))?.error, { code: -1, message: 'x', data: [1] })
    t.equal(await store.tasks.updateTask('alice', 't3', { statusMessage: 'retry?' }), undefined, 'failed is terminal too')
    await store.tasks.createTask('alice', task('brief', { ttlMs: 50 }))
    await sleep(80)
    t.equal(await peer.tasks.getTask('alice', 'brief'), undefined, 'gone after its ttlMs')
  })

  t.test('tasks: leases renewed while running, without touching what clients see', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    await store.tasks.createTask('alice', task('l1', { leaseUntil: 1000 }))
    t.equal((await peer.tasks.getTask('alice', 'l1'))?.leaseUntil, 1000, 'created with its lease')
    const before = (await store.tasks.getTask('alice', 'l1'))!.lastUpdatedAt
    await sleep(5)
    t.equal(await peer.tasks.renewTask('alice', 'l1', 5000), true, 'a running task is renewed')
    const renewed = await store.tasks.getTask('alice', 'l1')
    t.same([renewed?.leaseUntil, renewed?.lastUpdatedAt], [5000, before], 'the new lease, the same lastUpdatedAt')
    if (store.tasks.getTaskText !== undefined) {
      const text = await store.tasks.getTaskText('alice', 'l1')
      t.equal(text?.leaseUntil, 5000, 'the text form says the lease')
      t.notMatch(text?.json ?? '', /leaseUntil/, 'but not on the wire')
    }
    t.equal(await store.tasks.renewTask('bob', 'l1', 9000), false, 'another owner\'s task is not renewed')
    t.equal(await store.tasks.renewTask('alice', 'nope', 9000), false, 'nor an unknown one')
    await store.tasks.updateTask('alice', 'l1', { status: 'completed', result: {} })
    t.equal(await peer.tasks.renewTask('alice', 'l1', 9000), false, 'nor a finished one')
    t.equal((await store.tasks.getTask('alice', 'l1'))?.leaseUntil, 5000)
  })

  t.test('tasks: an end not yet notified is guarded by its lease; a lapsed lease is taken by one instance', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    const now = Date.now()
    await store.tasks.createTask('alice', task('n1', { notify: true, leaseUntil: now + 50 }))
    await store.tasks.createTask('alice', task('quiet', { leaseUntil: now - 1000 }))
    t.same(await peer.tasks.lapsedTasks(now, 10), [], 'nothing lapsed yet; a task without notify is never listed')
    const ended = updated(t, await store.tasks.updateTask('alice', 'n1', { status: 'completed', result: {} }))
    t.equal(ended?.notifyPending, true, 'an end that will be notified is marked pending in the same write')
    t.equal((await peer.tasks.getTask('alice', 'n1'))?.notifyPending, true, 'on every instance')
    if (store.tasks.getTaskText !== undefined) {
      const text = await store.tasks.getTaskText('alice', 'n1')
      t.equal(text?.notifyPending, true, 'the text form says so')
      t.notMatch(text?.json ?? '', /notifyPending/, 'but not on the wire')
    }
    t.equal(await peer.tasks.renewTask('alice', 'n1', now + 100), true, 'its lease is still renewed while the notification is pending')
    t.equal(await store.tasks.takeLapsedTask('alice', 'n1', now + 60, now + 60_000), undefined, 'not lapsed before its lease')
    t.same(await store.tasks.lapsedTasks(now + 200, 10), [{ owner: 'alice', taskId: 'n1' }], 'listed once its lease lapsed')
    const [a, b] = await Promise.all([store.tasks.takeLapsedTask('alice', 'n1', now + 200, now + 60_000), peer.tasks.takeLapsedTask('alice', 'n1', now + 200, now + 60_000)])
    t.equal([a, b].filter((x) => x !== undefined).length, 1, 'two instances at once: one takes it')
    const taken = a ?? b
    t.same([taken?.status, taken?.notifyPending, taken?.leaseUntil], ['completed', true, now + 60_000], 'taken as it is, with the taker\'s lease')
    t.same(await peer.tasks.lapsedTasks(now + 200, 10), [], 'the taker holds it')
    await peer.tasks.notifiedTask('alice', 'n1')
    t.equal((await store.tasks.getTask('alice', 'n1'))?.notifyPending, undefined, 'notified: the mark is gone')
    t.equal(await store.tasks.renewTask('alice', 'n1', now + 90_000), false, 'a finished, notified task is not renewed')
    t.equal(await store.tasks.takeLapsedTask('alice', 'n1', now + 120_000, now + 180_000), undefined, 'nor taken, however late')
    t.same(await store.tasks.lapsedTasks(now + 120_000, 10), [], 'and no longer listed')

    await store.tasks.createTask('bob', task('r1', { notify: true, leaseUntil: now - 5 }))
    t.same(await store.tasks.lapsedTasks(now, 10), [{ owner: 'bob', taskId: 'r1' }], 'a running task whose lease lapsed is listed')
    t.equal(await store.tasks.takeLapsedTask('alice', 'r1', now, now + 1), undefined, 'not by another owner')
    const running = await peer.tasks.takeLapsedTask('bob', 'r1', now, now + 60_000)
    t.same([running?.status, running?.leaseUntil], ['working', now + 60_000], 'a running task is taken as it is (the taker fails it)')
    t.same(await store.tasks.lapsedTasks(now + 1000, 10), [], 'moved to the taker\'s lease')
    t.equal(await store.tasks.takeLapsedTask('bob', 'gone', now, now + 1), undefined, 'an unknown task: nothing to take')
    await store.tasks.createTask('bob', task('r2', { notify: true, leaseUntil: now - 5 }))
    await store.tasks.createTask('bob', task('r3', { notify: true, leaseUntil: now - 5 }))
    t.equal((await store.tasks.lapsedTasks(now, 1)).length, 1, 'at most max at a time')
    t.equal((await store.tasks.takeLapsedTask('alice', 'quiet', now, now + 1))?.status, 'working', 'a lapsed task without notify is taken too (by a read)')
    await store.tasks.notifiedTask('alice', 'quiet')
    await store.tasks.notifiedTask('alice', 'nope')
    t.same([(await store.tasks.getTask('alice', 'quiet'))?.status, await store.tasks.getTask('alice', 'nope')], ['working', undefined], 'notifiedTask of a task with nothing pending, or unknown, changes nothing')
  })

  t.test('tasks: input requests answered (only outstanding keys), runners woken on any instance', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    const q = (m: string) => ({ method: 'elicitation/create', params: { message: m, requestedSchema: { type: 'object', properties: {} } } })
    await store.tasks.createTask('alice', task('t1', { notify: true }))
    t.same(await store.tasks.answerTask('alice', 't1', { a: { x: 1 } }), [], 'nothing outstanding: nothing taken')
    const asked = updated(t, await store.tasks.updateTask('alice', 't1', { status: 'input_required', inputRequests: { a: q('A?'), b: q('B?') } }))
    t.same(asked?.inputRequests, { a: q('A?'), b: q('B?') })
    const runner = store.tasks.awaitTaskAnswers('alice', 't1', ['a', 'b'], new AbortController().signal)
    t.equal(await store.tasks.answerTask('bob', 't1', { a: {} }), undefined, 'bob cannot answer it')
    t.equal(await store.tasks.answerTask('alice', 'nope', { a: {} }), undefined)
    t.same(await peer.tasks.answerTask('alice', 't1', { a: { action: 'accept', content: { v: 'A' } }, zzz: { ignored: true } }), ['a'], 'unknown keys are ignored')
    const partial = await store.tasks.getTask('alice', 't1')
    t.same([partial?.status, partial?.inputRequests], ['input_required', { b: q('B?') }], 'partly answered: still input_required')
    t.same(await peer.tasks.answerTask('alice', 't1', { a: { again: true } }), [], 'a key answered is no longer outstanding')
    const withdrawn = updated(t, await store.tasks.updateTask('alice', 't1', { inputRequests: undefined }))
    t.notOk(withdrawn && 'inputRequests' in withdrawn, 'a patch can withdraw the input requests')
    await store.tasks.updateTask('alice', 't1', { inputRequests: { b: q('B?') } })
    t.same(await peer.tasks.answerTask('alice', 't1', { b: { action: 'decline' } }), ['b'])
    t.same(await runner, { a: { action: 'accept', content: { v: 'A' } }, b: { action: 'decline' } }, 'the runner gets every answer')
    const after = await store.tasks.getTask('alice', 't1')
    t.equal(after?.status, 'working', 'all answered: working again')
    t.notOk(after && 'inputRequests' in after)

    await store.tasks.updateTask('alice', 't1', { status: 'input_required', inputRequests: { c: q('C?') } })
    await peer.tasks.answerTask('alice', 't1', { c: { n: 1 } })
    t.same(await store.tasks.awaitTaskAnswers('alice', 't1', ['c'], new AbortController().signal), { c: { n: 1 } }, 'answers that came first are kept for the runner')
    const gone = new AbortController()
    const waiting = store.tasks.awaitTaskAnswers('alice', 't1', ['c'], gone.signal)
    await sleep(20)
    gone.abort(new Error('task cancelled'))
    await t.rejects(waiting, /task cancelled/, 'each answer is handed out once; an abort ends the wait')
    const aborted = new AbortController()
    aborted.abort(new Error('already'))
    await t.rejects(store.tasks.awaitTaskAnswers('alice', 't1', ['c'], aborted.signal), /already/)
    await t.rejects(store.tasks.awaitTaskAnswers('alice', 'nope', ['c'], new AbortController().signal), /The task is gone/)

    await store.tasks.createTask('alice', task('t2', { status: 'input_required', inputRequests: { k: q('K?') } }))
    await store.tasks.updateTask('alice', 't2', { status: 'cancelled' })
    t.same(await store.tasks.answerTask('alice', 't2', { k: { late: true } }), ['k'], 'a terminal task still takes the answer')
    t.equal((await store.tasks.getTask('alice', 't2'))?.status, 'cancelled', 'but stays terminal')
  })

  t.test('tasks: expire after ttlMs; running ones bounded in number, finished ones only in bytes', async (t) => {
    const store = await make(t, { maxTasks: 2 })
    // A second, not 100 ms: on a busy machine the steps before the sleep must not outlast it.
    await store.tasks.createTask('alice', task('short', { ttlMs: 1000 }))
    await store.tasks.createTask('alice', task('long', { ttlMs: 5000 }))
    // Space frees when the first running task expires (within a second): Retry-After 1, not a guess.
    await rejectsWithLimit(t, store.tasks.createTask('bob', task('third')), 'ERR_STORE_TOO_MANY_TASKS', { status: 503, message: 'Too many tasks in progress (2)', headers: { 'retry-after': '1' } })
    t.equal(await store.tasks.getTask('bob', 'third'), undefined, 'a refused task is not kept')
    t.ok(await store.tasks.getTask('alice', 'short'))
    await sleep(1050)
    await store.tasks.createTask('bob', task('third'))
    t.ok(await store.tasks.getTask('bob', 'third'), 'an expired task no longer counts')
    t.equal(await store.tasks.getTask('alice', 'short'), undefined, 'expired')
    t.equal(await store.tasks.updateTask('alice', 'short', { status: 'failed' }), undefined)
    t.equal(await store.tasks.answerTask('alice', 'short', { a: {} }), undefined)
    // The long one expires in a little under 4 s now.
    await rejectsWithLimit(t, store.tasks.createTask('carol', task('fourth')), 'ERR_STORE_TOO_MANY_TASKS', { status: 503, headers: { 'retry-after': '4' } })
    await store.tasks.updateTask('alice', 'long', { status: 'completed', result: { content: [] } })
    await store.tasks.createTask('carol', task('fourth'))
    t.equal((await store.tasks.getTask('alice', 'long'))?.status, 'completed', 'a finished task is kept, but no longer takes a running slot')
  })

  t.test('tasks: a quota per principal, running and in bytes; a result that does not fit fails the task', async (t) => {
    const store = await make(t, { maxTasksPerPrincipal: 2, maxTaskBytesPerPrincipal: 4000, maxTaskBytes: 7000 })
    await store.tasks.createTask('alice', task('a1', { ttlMs: 3000 }))
    await store.tasks.createTask('alice', task('a2'))
    await rejectsWithLimit(t, store.tasks.createTask('alice', task('a3')), 'ERR_STORE_QUOTA', {
      status: 429,
      code: -32600,
      message: 'This client holds as many running tasks as it may (2): retry later',
      headers: { 'retry-after': '3' }
    }, 'one principal cannot run more than its share; Retry-After is when its first task expires')
    await store.tasks.createTask('bob', task('b1'))
    t.ok(await store.tasks.getTask('bob', 'b1'), 'another principal still can')
    const big = { content: [{ type: 'text', text: 'x'.repeat(5000) }] }
    t.equal(await store.tasks.updateTask('alice', 'a1', { status: 'completed', result: big }), true, 'the task changed')
    const failed = await store.tasks.getTask('alice', 'a1')
    t.match(failed, { status: 'failed', error: { code: -32603, message: /larger than the server may keep/ } }, 'a result beyond the quota is not kept')
    t.notOk(failed && 'result' in failed)
    await store.tasks.updateTask('alice', 'a2', { status: 'completed', result: { content: [{ type: 'text', text: 'y'.repeat(2500) }] } })
    t.equal((await store.tasks.getTask('alice', 'a2'))?.status, 'completed', 'one that fits is kept')
    await rejectsWithLimit(t, store.tasks.createTask('alice', task('a4', { pollIntervalMs: 1000, statusMessage: 'z'.repeat(1200) })), 'ERR_STORE_QUOTA', {
      status: 429,
      message: /as many bytes of tasks as it may \(4000\)/
    }, 'finished tasks count in bytes')
    await store.tasks.createTask('bob', task('b2', { ttlMs: 2000 }))
    await store.tasks.updateTask('bob', 'b1', { status: 'completed', result: { content: [{ type: 'text', text: 'w'.repeat(1500) }] } })
    t.equal((await store.tasks.getTask('bob', 'b1'))?.status, 'completed')
    await rejectsWithLimit(t, store.tasks.createTask('carol', task('c1', { statusMessage: 'v'.repeat(1200) })), 'ERR_STORE_FULL', {
      status: 503,
      code: -32603,
      message: /as many bytes of tasks as it may \(7000\)/,
      headers: { 'retry-after': '2' }
    }, 'beyond the store\'s bytes everyone waits until the first task expires')
    await rejectsWithLimit(t, store.tasks.createTask('erin', task('e1', { statusMessage: 'u'.repeat(5000) })), 'ERR_STORE_QUOTA', {
      status: 429,
      headers: { 'retry-after': '1' }
    }, 'a task larger than a whole share is refused; nothing of the owner will expire, so Retry-After is the least')
  })

  t.test('tasks: Retry-After is the first expiry among what would free space, whatever the order of creation', async (t) => {
    const store = await make(t, { maxTasksPerPrincipal: 2 })
    await store.tasks.createTask('alice', task('late', { ttlMs: 9000 }))
    await store.tasks.createTask('alice', task('soon', { ttlMs: 4000 }))
    await rejectsWithLimit(t, store.tasks.createTask('alice', task('third')), 'ERR_STORE_QUOTA', { status: 429, headers: { 'retry-after': '4' } }, 'the later task expires first')
    await store.tasks.updateTask('alice', 'soon', { status: 'completed', result: { content: [] } })
    await store.tasks.createTask('alice', task('third', { ttlMs: 7000 }))
    await rejectsWithLimit(t, store.tasks.createTask('alice', task('fourth')), 'ERR_STORE_QUOTA', { status: 429, headers: { 'retry-after': '7' } }, 'a finished task frees no running slot: it is not the answer')
    await store.tasks.createTask('bob', task('b1', { ttlMs: 2000 }))
    await rejectsWithLimit(t, store.tasks.createTask('alice', task('fifth')), 'ERR_STORE_QUOTA', { status: 429, headers: { 'retry-after': '7' } }, 'another principal\'s tasks do not count')
  })

  t.test('sessions: issued, checked, expire unused, bounded', async (t) => {
    // 2 s, half of it waited between uses: a second of margin for the calls in between on a busy machine.
    const store = await make(t, { sessionTtlMs: 2000, maxConnections: 2 })
    const s1 = await store.connections.createSession()
    t.match(s1, /^[\w-]{24}$/)
    const peer = await peerOf(t, store)
    t.equal(await peer.connections.hasSession(s1), true, 'known to every instance')
    t.equal(await store.connections.hasSession('forged'), false)
    await sleep(1000)
    t.equal(await store.connections.hasSession(s1), true, 'a use pushes the expiry back')
    await sleep(1000)
    t.equal(await store.connections.hasSession(s1), true)
    await sleep(2100)
    t.equal(await store.connections.hasSession(s1), false, 'expired unused')
    const a = await store.connections.createSession()
    const b = await store.connections.createSession()
    await store.connections.hasSession(a)
    const c = await store.connections.createSession()
    t.same([await store.connections.hasSession(a), await store.connections.hasSession(b), await store.connections.hasSession(c)], [true, false, true], 'beyond the bound the least recently used goes')
  })

  t.test('idempotency: claim, run once, replay; conflicts; leases', async (t) => {
    const store = await make(t)
    const peer = await peerOf(t, store)
    t.same(await store.idempotency.beginIdempotent('alice', 'k1', 'd1', 5000), { state: 'new' })
    const racing = await Promise.all([store, peer].map((s) => s.idempotency.beginIdempotent('alice', 'k1', 'd1', 5000)))
    t.same(racing, [{ state: 'in_progress' }, { state: 'in_progress' }], 'claimed once')
    t.same(await peer.idempotency.beginIdempotent('alice', 'k1', 'other', 5000), { state: 'conflict' })
    t.same(await store.idempotency.beginIdempotent('bob', 'k1', 'other', 5000), { state: 'new' }, 'ids are per owner')
    t.equal(await peer.idempotency.renewIdempotent('alice', 'k1', 5000), true)
    await peer.idempotency.finishIdempotent('alice', 'k1', '{"status":200,"body":"[]"}', 5000)
    t.equal(await store.idempotency.renewIdempotent('alice', 'k1', 5000), false, 'finished: nothing to renew')
    t.same(await store.idempotency.beginIdempotent('alice', 'k1', 'd1', 5000), { state: 'done', response: '{"status":200,"body":"[]"}' })
    t.same(await store.idempotency.beginIdempotent('alice', 'k1', 'd2', 5000), { state: 'conflict' }, 'done, but another request')

    t.same(await store.idempotency.beginIdempotent('alice', 'k2', 'd', 5000), { state: 'new' })
    await store.idempotency.abandonIdempotent('alice', 'k2')
    t.same(await store.idempotency.beginIdempotent('alice', 'k2', 'other', 5000), { state: 'new' }, 'abandoned: a retry runs again')
    t.equal(await store.idempotency.renewIdempotent('alice', 'never', 5000), false)
    await store.idempotency.finishIdempotent('alice', 'never', 'x', 5000)
    t.same(await store.idempotency.beginIdempotent('alice', 'never', 'd', 5000), { state: 'new' }, 'finishing an unknown claim records nothing')

    t.same(await store.idempotency.beginIdempotent('carol', 'lease', 'd', 100), { state: 'new' })
    await sleep(150)
    t.equal(await store.idempotency.renewIdempotent('carol', 'lease', 100), false, 'a lapsed claim cannot be renewed')
    await store.idempotency.finishIdempotent('carol', 'lease', 'late', 5000)
    t.same(await store.idempotency.beginIdempotent('carol', 'lease', 'd', 100), { state: 'new' }, 'lapsed (its instance died): a retry runs again')
    await store.idempotency.finishIdempotent('carol', 'lease', 'r', 100)
    await sleep(150)
    t.same(await store.idempotency.beginIdempotent('carol', 'lease', 'd', 5000), { state: 'new' }, 'replayed only for the retention time')
  })

  t.test('idempotency: a claim still running is never evicted; a full store refuses with when it frees', async (t) => {
    const store = await make(t, { maxIdempotencyRecords: 2 })
    await store.idempotency.beginIdempotent('a', '0', 'd', 50)
    await store.idempotency.beginIdempotent('b', '00', 'd', 50)
    await sleep(80)
    t.same(await store.idempotency.beginIdempotent('a', 'running', 'd', 1500), { state: 'new' }, 'expired records make room')
    t.same(await store.idempotency.beginIdempotent('b', 'done', 'd', 60_000), { state: 'new' })
    await store.idempotency.finishIdempotent('b', 'done', '{"status":200}', 60_000)
    await rejectsWithLimit(t, store.idempotency.beginIdempotent('c', 'new', 'd', 60_000), 'ERR_STORE_FULL', {
      status: 503,
      code: -32603,
      message: 'The server holds as many replayable tool calls as it may (2): retry later',
      headers: { 'retry-after': '2' }
    }, 'full: the new call is refused, with Retry-After when the first record expires')
    t.same(await store.idempotency.beginIdempotent('a', 'running', 'd', 60_000), { state: 'in_progress' }, 'the running claim was kept: its retry is not run twice')
    t.same(await store.idempotency.beginIdempotent('b', 'done', 'd', 60_000), { state: 'done', response: '{"status":200}' })
    t.same(await store.idempotency.beginIdempotent('c', 'new', 'd', 60_000).catch(() => 'refused'), 'refused', 'and nothing of the refused call was kept')
    await store.idempotency.abandonIdempotent('a', 'running')
    t.same(await store.idempotency.beginIdempotent('c', 'new', 'd', 60_000), { state: 'new' }, 'room again once a record goes')
  })

  t.test('idempotency: Retry-After follows renewals and finishes, not the order of the claims', async (t) => {
    const store = await make(t, { maxIdempotencyRecordsPerPrincipal: 2 })
    await store.idempotency.beginIdempotent('alice', 'first', 'd', 3000)
    await store.idempotency.beginIdempotent('alice', 'second', 'd', 5000)
    t.equal(await store.idempotency.renewIdempotent('alice', 'first', 8000), true)
    await rejectsWithLimit(t, store.idempotency.beginIdempotent('alice', 'third', 'd', 60_000), 'ERR_STORE_QUOTA', { status: 429, headers: { 'retry-after': '5' } }, 'the renewed claim now expires last')
    await store.idempotency.finishIdempotent('alice', 'second', '{"status":200}', 9000)
    await rejectsWithLimit(t, store.idempotency.beginIdempotent('alice', 'third', 'd', 60_000), 'ERR_STORE_QUOTA', { status: 429, headers: { 'retry-after': '8' } }, 'a finished call is kept its retention time')
    await store.idempotency.abandonIdempotent('alice', 'first')
    await rejectsWithLimit(t, store.idempotency.beginIdempotent('alice', 'third', 'd', 60_000).then(() => store.idempotency.beginIdempotent('alice', 'fourth', 'd', 60_000)), 'ERR_STORE_QUOTA', { status: 429, headers: { 'retry-after': '9' } }, 'an abandoned claim is gone')
  })

  t.test('idempotency: a quota per principal, in records and bytes', async (t) => {
    const store = await make(t, { maxIdempotencyRecordsPerPrincipal: 2, maxIdempotencyBytesPerPrincipal: 4096, maxIdempotencyBytes: 8192 })
    await store.idempotency.beginIdempotent('alice', '1', 'd', 2500)
    await store.idempotency.beginIdempotent('alice', '2', 'd', 60_000)
    await rejectsWithLimit(t, store.idempotency.beginIdempotent('alice', '3', 'd', 60_000), 'ERR_STORE_QUOTA', {
      status: 429,
      code: -32600,
      message: 'This client holds as many replayable tool calls as it may (2): retry later',
      // When the first claim's 2.5 s lease ends, less what the calls since took (a slow store, a busy
      // machine): 3 s or less, never the other claim's minute.
      headers: { 'retry-after': /^[1-3]$/ }
    })
    t.same(await store.idempotency.beginIdempotent('bob', '1', 'd', 60_000), { state: 'new' }, 'another principal is not held back')
    await store.idempotency.finishIdempotent('bob', '1', 'x'.repeat(5000), 60_000)
    t.same(await store.idempotency.beginIdempotent('bob', '1', 'd', 60_000), { state: 'new' }, 'an outcome beyond the byte quota is not kept: a retry runs again')
    await store.idempotency.finishIdempotent('bob', '1', 'x'.repeat(3000), 60_000)
    t.match(await store.idempotency.beginIdempotent('bob', '1', 'd', 60_000), { state: 'done' }, 'one that fits is')
    await store.idempotency.beginIdempotent('carol', '1', 'd', 60_000)
    await store.idempotency.finishIdempotent('carol', '1', 'y'.repeat(3500), 60_000)
    t.match(await store.idempotency.beginIdempotent('carol', '1', 'd', 60_000), { state: 'done' })
    await store.idempotency.beginIdempotent('dave', '1', 'd', 60_000)
    await store.idempotency.finishIdempotent('dave', '1', 'z'.repeat(1000), 60_000)
    t.same(await store.idempotency.beginIdempotent('dave', '1', 'd', 60_000), { state: 'new' }, 'beyond the store\'s bytes an outcome is not kept either')
    await rejectsWithLimit(t, store.idempotency.beginIdempotent('erin', '1', 'd'.repeat(1500), 60_000), 'ERR_STORE_FULL', { status: 503, message: /replayable tool calls as it may \(8192\)/ })
  })

  t.test('once: a key is claimed once, on every instance, until its time is up', async (t) => {
    const store = await make(t)
    const keys = await companion(store, 'onceKeys', 'test')
    const peerKeys = await companion(await peerOf(t, store), 'onceKeys', 'test')
    t.equal(await keys.once('dpop:a', 60_000), true, 'the first claim wins')
    t.equal(await keys.once('dpop:a', 60_000), false, 'a second claim loses')
    t.equal(await peerKeys.once('dpop:a', 60_000), false, 'on another instance too')
    t.equal(await peerKeys.once('dpop:b', 60_000), true, 'another key is its own')
    t.equal(await keys.once('dpop:' + 'x'.repeat(5000), 60_000), true, 'a long key is fine')
    await keys.once('dpop:short', 40)
    await sleep(120)
    t.equal(await peerKeys.once('dpop:short', 60_000), true, 'a claim past its time is free again')
    t.equal(await keys.once('dpop:a', 60_000), false, 'one within its time is not')
  })
}
