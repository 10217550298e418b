import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { Webhook } from 'standardwebhooks'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { build, call } from '../helpers/helper.js'
import { startReceiver } from '../helpers/webhook-receiver.js'

const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
const quick = { backoffMs: 5, maxBackoffMs: 20, pollMs: 20 }

async function setup(t: Test, port: number, options: Record<string, unknown> = {}) {
  const { app, mcp } = await build(t, {
    mcp: createDemoServer({ taskStepMs: 10 }),
    authenticate: async (request) => ({ id: String(request.headers['x-user'] ?? 'alice'), scopes: [], anonymous: false }),
    webhooks: { allowedHosts: [`127.0.0.1:${port}`], ...quick, ...options }
  })
  return { app, mcp }
}

/** The webhook's attempt log once it holds `n` entries: an attempt is logged just after the receiver answers. */
async function attemptsLogged(app: FastifyInstance, id: string, n: number): Promise<any[]> {
  for (let i = 0; ; i++) {
    const log = (await call(app, { url: `/webhooks/${id}/deliveries` })).body.deliveries
    if (log.length >= n || i === 1000) return log
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const register = (app: FastifyInstance, body: unknown, user = 'alice') =>
  call(app, { method: 'POST', url: '/webhooks', payload: body as Record<string, unknown>, headers: { 'x-user': user } })

t.test('register, list, get, delete: per connection, secret shown once', async (t) => {
  const rx = await startReceiver()
  t.teardown(() => rx.close())
  const { app } = await setup(t, rx.port, { maxWebhooks: 2 })
  const made = await register(app, { url: rx.url, events: ['notifications/progress', 'notifications/progress'] })
  t.equal(made.status, 201)
  t.equal(made.headers.location, `/webhooks/${made.body.id}`)
  t.match(made.body, { id: /^wh_/, url: rx.url, events: ['notifications/progress'], status: 'active', consecutiveFailures: 0 })
  t.match(made.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  t.ok(Buffer.from(made.body.secret.slice(6), 'base64').length >= 24, 'at least 24 random bytes')
  const one = await call(app, { url: `/webhooks/${made.body.id}` })
  t.equal(one.status, 200)
  t.notOk('secret' in one.body, 'the secret is shown only at registration')
  const { secret: _secret, ...shown } = made.body
  t.same(one.body, shown)
  t.same((await call(app, { url: '/webhooks' })).body, { webhooks: [one.body] })

  t.same((await call(app, { url: '/webhooks', headers: { 'x-user': 'bob' } })).body, { webhooks: [] }, 'bob sees none')
  for (const [method, url] of [['GET', `/webhooks/${made.body.id}`], ['DELETE', `/webhooks/${made.body.id}`], ['GET', `/webhooks/${made.body.id}/deliveries`]] as const) {
    const other = await call(app, { method, url, headers: { 'x-user': 'bob' } })
    t.same([other.status, other.body.code], [404, -32602], `${method} ${url} by another principal: 404`)
  }

  await register(app, { url: rx.url })
  const full = await register(app, { url: rx.url })
  t.same([full.status, full.body], [400, { code: -32602, message: 'Too many webhooks (limit 2): delete one first' }])

  const gone = await call(app, { method: 'DELETE', url: `/webhooks/${made.body.id}` })
  t.same([gone.status, gone.raw], [204, ''])
  t.equal((await call(app, { url: `/webhooks/${made.body.id}` })).status, 404)
  t.equal((await call(app, { method: 'DELETE', url: `/webhooks/${made.body.id}` })).status, 404)
  t.equal((await call(app, { method: 'PUT', url: '/webhooks' })).status, 405)
})

t.test('registration validates its body', async (t) => {
  const { app } = await setup(t, 1)
  for (const body of [{}, { url: '' }, { url: 'https://x.example', events: [] }, { url: 'https://x.example', events: ['tools/call'] }, { url: 'https://x.example', extra: 1 }]) {
    const res = await register(app, body)
    t.equal(res.status, 400, JSON.stringify(body))
  }
  const bad = await register(app, { url: 'not a url' })
  t.same(bad.body, { code: -32602, message: 'The webhook URL is not an absolute URL' })
  t.same((await register(app, { url: 'http://example.com/hook' })).body.message, 'The webhook URL must use https')
  t.same((await register(app, { url: 'https://u:p@example.com/hook' })).body.message, 'The webhook URL must not carry credentials')
})

t.test('deliveries are signed the Standard Webhooks way, and standardwebhooks verifies them', async (t) => {
  const rx = await startReceiver()
  t.teardown(() => rx.close())
  const { app, mcp } = await setup(t, rx.port)
  const { secret, id } = (await register(app, { url: rx.url })).body
  // The demo's slow_compute, called inline with a progress token: progress arrives as it happens.
  const done = await call(app, { method: 'POST', url: '/tools/slow_compute/calls', payload: { arguments: { n: 3 }, _meta: { progressToken: 'p1' } } })
  t.same(done.body.structuredContent, { sum: 6 })
  const got = await rx.waitFor(3)
  const wh = new Webhook(secret)
  const notes = got.map((d) => wh.verify(d.body, d.headers as Record<string, string>) as any)
  t.same(notes.map((n) => [n.jsonrpc, n.method, n.params.progressToken, n.params.progress]), [1, 2, 3].map((i) => ['2.0', 'notifications/progress', 'p1', i]))
  t.equal(got[0]!.headers['content-type'], 'application/json')
  t.match(got[0]!.headers['webhook-id'], /^msg_/)
  t.throws(() => new Webhook(secret).verify(got[0]!.body + ' ', got[0]!.headers as Record<string, string>), 'a changed body fails')
  t.same((await call(app, { url: '/notifications' })).body, [], 'delivered instead of queued')
  const log = await attemptsLogged(app, id, 3)
  t.equal(log.length, 3)
  t.match(log[0], { attempt: 1, status: 'delivered', responseStatus: 200 })
  // Other connections and other events are not this webhook's business.
  await mcp.store.mailbox.pushNotification('bob', { method: 'notifications/progress', params: { progressToken: 'b', progress: 1 } })
  t.equal((await call(app, { url: '/notifications', headers: { 'x-user': 'bob' } })).body.length, 1)
})

t.test('a task\'s status and completion arrive without polling', async (t) => {
  const rx = await startReceiver()
  t.teardown(() => rx.close())
  const { app } = await setup(t, rx.port)
  const { secret } = (await register(app, { url: rx.url, events: ['notifications/tasks'] })).body
  const started = await call(app, { method: 'POST', url: '/tools/slow_compute/calls', payload: { arguments: { n: 2 }, _meta: TASKS, task: { notify: true } } })
  t.equal(started.status, 202)
  const wh = new Webhook(secret)
  for (let seen = 1; ; seen++) {
    const got = await rx.waitFor(seen)
    const last = wh.verify(got[seen - 1]!.body, got[seen - 1]!.headers as Record<string, string>) as any
    t.equal(last.method, 'notifications/tasks')
    t.equal(last.params.taskId, started.body.taskId)
    if (last.params.status === 'completed') {
      t.same(last.params.result.structuredContent, { sum: 3 })
      break
    }
  }
})

t.test('500 twice then 200: three attempts of one message, one webhook-id', async (t) => {
  const rx = await startReceiver((n) => (n < 2 ? 500 : 200))
  t.teardown(() => rx.close())
  const { app, mcp } = await setup(t, rx.port)
  const { id } = (await register(app, { url: rx.url })).body
  await mcp.store.mailbox.pushNotification('alice', { method: 'notifications/message', params: { level: 'info', data: 'hi' } })
  const got = await rx.waitFor(3)
  t.equal(new Set(got.map((d) => d.headers['webhook-id'])).size, 1, 'the same webhook-id three times')
  const log = await attemptsLogged(app, id, 3)
  t.match(log, [
    { attempt: 3, status: 'delivered', responseStatus: 200 },
    { attempt: 2, status: 'retrying', responseStatus: 500, error: 'The receiver answered 500' },
    { attempt: 1, status: 'retrying', responseStatus: 500 }
  ])
  t.ok(log[1].nextRetryAt, 'a retry says when it is due')
  t.same((await call(app, { url: '/notifications' })).body, [])
})

t.test('a dead receiver: every attempt fails, and the message is back on /notifications', async (t) => {
  const rx = await startReceiver()
  await rx.close()
  const { app, mcp } = await setup(t, rx.port, { attempts: 3 })
  const { id } = (await register(app, { url: rx.url })).body
  await mcp.store.mailbox.pushNotification('alice', { method: 'notifications/message', params: { level: 'info', data: 'lost?' } })
  let queued: unknown[] = []
  for (let i = 0; i < 500 && queued.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    queued = (await call(app, { url: '/notifications' })).body
  }
  t.same(queued, [{ method: 'notifications/message', params: { level: 'info', data: 'lost?' } }], 'nothing lost')
  const log = await attemptsLogged(app, id, 3)
  t.same(log.map((a: any) => [a.attempt, a.status]), [[3, 'returned'], [2, 'retrying'], [1, 'retrying']])
  t.match(log[0].error, /ECONNREFUSED/)
  t.match((await call(app, { url: `/webhooks/${id}` })).body, { status: 'active', consecutiveFailures: 1 })
})

async function queuedEventually(app: FastifyInstance, n: number, user = 'alice'): Promise<any[]> {
  const all: any[] = []
  for (let i = 0; i < 500 && all.length < n; i++) {
    const got = await call(app, { url: '/notifications', headers: { 'x-user': user } })
    if (got.body.length > 0) {
      all.push(...got.body)
      await call(app, { method: 'POST', url: '/notifications', headers: { 'x-user': user, 'mcp-message-group': got.headers['mcp-message-group'] as string } })
    } else await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return all
}

t.test('410 Gone disables the webhook at once; later notifications are queued', async (t) => {
  const rx = await startReceiver(() => 410)
  t.teardown(() => rx.close())
  const { app, mcp } = await setup(t, rx.port)
  const { id } = (await register(app, { url: rx.url })).body
  await mcp.store.mailbox.pushNotification('alice', { method: 'notifications/message', params: { data: 1 } })
  t.same((await queuedEventually(app, 1)).map((n) => n.params.data), [1])
  t.match((await call(app, { url: `/webhooks/${id}` })).body, { status: 'disabled', disabledReason: 'The receiver answered 410 Gone', disabledAt: String })
  await mcp.store.mailbox.pushNotification('alice', { method: 'notifications/message', params: { data: 2 } })
  t.same((await queuedEventually(app, 1)).map((n) => n.params.data), [2])
  t.equal(rx.got.length, 1, 'one attempt, no retry')
})

t.test('N messages in a row that fail disable the webhook; what was pending is queued', async (t) => {
  const rx = await startReceiver((n) => (n === 0 ? 500 : n === 1 ? 200 : { status: 302, headers: { location: '/elsewhere' } }))
  t.teardown(() => rx.close())
  const { app, mcp } = await setup(t, rx.port, { attempts: 1, disableAfter: 2, concurrency: 1 })
  const { id } = (await register(app, { url: rx.url })).body
  await mcp.store.mailbox.pushNotification('alice', { method: 'notifications/message', params: { data: 0 } })
  await rx.waitFor(1)
  await mcp.store.mailbox.pushNotification('alice', { method: 'notifications/message', params: { data: 1 } })
  await rx.waitFor(2)
  await attemptsLogged(app, id, 2)
  t.match((await call(app, { url: `/webhooks/${id}` })).body, { status: 'active', consecutiveFailures: 0 }, 'a delivery resets the count')
  for (const data of [2, 3, 4]) await mcp.store.mailbox.pushNotification('alice', { method: 'notifications/message', params: { data } })
  const queued = await queuedEventually(app, 4)
  t.same(queued.map((n) => n.params.data).sort(), [0, 2, 3, 4], 'the failed ones and the pending one')
  t.match((await call(app, { url: `/webhooks/${id}` })).body, {
    status: 'disabled',
    consecutiveFailures: 2,
    disabledReason: '2 messages in a row failed every attempt; the last: The receiver answered 302'
  })
  t.equal(rx.got.filter((d) => d.headers['webhook-id'] !== undefined).length, 4, 'the redirect was not followed')
})

t.test('list_changed reaches a connection with a webhook by delivery, every other on /notifications; a failed one is queued after all', async (t) => {
  const rx = await startReceiver((n) => (n === 0 ? 200 : 500))
  t.teardown(() => rx.close())
  const { app, mcp } = await setup(t, rx.port, { attempts: 2 })
  const { secret } = (await register(app, { url: rx.url, events: ['notifications/tools/list_changed', 'notifications/prompts/list_changed'] })).body
  t.equal((await register(app, { url: rx.url, events: ['notifications/progress'] }, 'carol')).status, 201, 'carol wants no list_changed')
  t.equal((await call(app, { method: 'POST', url: '/logLevel', payload: { level: 'info' }, headers: { 'mcp-protocol-version': '2025-11-25', 'x-user': 'bob' } })).status, 202, 'bob: a connection, no webhook')
  await call(app, { method: 'POST', url: '/logLevel', payload: { level: 'info' }, headers: { 'mcp-protocol-version': '2025-11-25', 'x-user': 'carol' } })
  await call(app, { method: 'POST', url: '/logLevel', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { level: 'info' } })

  mcp.tool({ name: 'added' }, async () => 'added')
  const [first] = await rx.waitFor(1)
  t.same(new Webhook(secret).verify(first!.body, first!.headers as Record<string, string>), { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
  t.same(await queuedEventually(app, 1, 'bob'), [{ method: 'notifications/tools/list_changed' }])
  t.same(await queuedEventually(app, 1, 'carol'), [{ method: 'notifications/tools/list_changed' }])
  t.same((await call(app, { url: '/notifications' })).body, [], 'alice got it by webhook, not queued as well')

  // Every attempt fails: alice gets it on /notifications after all.
  mcp.prompt({ name: 'added' }, () => 'added')
  t.same(await queuedEventually(app, 1), [{ method: 'notifications/prompts/list_changed' }])
  t.equal(rx.got.length, 3, 'one delivered, two attempts of the other')
  t.same((await queuedEventually(app, 1, 'bob')).map((n) => n.method), ['notifications/prompts/list_changed'])
})
