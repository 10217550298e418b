import t from 'tap'
import { RedisStore } from '../../src/store/redis.js'
import { call, json } from '../helpers/helper.js'
import { caps, everythingStdio, serveUpstream, until } from '../helpers/gateway-helper.js'
import { oddUpstream } from '../helpers/gateway-odd.js'
import { startRedis } from '../helpers/redis-server.js'

const TASKS = caps({ extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: {} })
const polling = { 'mcp-meta': JSON.stringify(TASKS) }

t.test('a call still running after taskAfterMs becomes a task; its result lands in the store, any instance answers the polls', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const stores: RedisStore[] = []
  t.teardown(async () => {
    for (const s of stores) await s.close()
  })
  const store = () => {
    const s = new RedisStore({ url: redis.url, prefix: 'gwtasks:' })
    stores.push(s)
    return s
  }
  const a = await serveUpstream(t, everythingStdio, { store: store(), taskAfterMs: 1500 })
  const b = await serveUpstream(t, everythingStdio, { store: store() })
  const created = await call(a.app, { method: 'POST', url: '/tools/trigger-long-running-operation/calls', ...json({ arguments: { duration: 4, steps: 4 }, _meta: TASKS }) })
  t.equal(created.status, 202)
  t.equal(created.body.resultType, 'task')
  t.equal(created.headers.location, `/tasks/${created.body.taskId}`)
  t.equal(created.headers['retry-after'], '1')
  let task: { status: string; result?: { content: { text: string }[] } } | undefined
  await until(async () => (task = (await call(b.app, { url: created.headers.location as string, headers: polling })).body).status === 'completed', 'the task done')
  t.match(task!.result!.content[0]!.text, /Long running operation completed/, 'polled on the other instance')
  // A call that ends before taskAfterMs is answered as usual; so is one from a client without tasks.
  const echo = await call(a.app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'quick' }, _meta: TASKS }) })
  t.same([echo.status, echo.body.content[0].text], [200, 'Echo: quick'])
  const byDefault = await call(b.app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'default' }, _meta: TASKS }) })
  t.same([byDefault.status, byDefault.body.content[0].text], [200, 'Echo: default'], 'within the default taskAfterMs')
})

t.test('a task asks the upstream\'s questions as its inputRequests; tasks/cancel cancels the upstream request', async (t) => {
  const { app, gw } = await serveUpstream(t, oddUpstream, { taskAfterMs: 0 })
  const created = await call(app, { method: 'POST', url: '/tools/ask/calls', ...json({ arguments: {}, _meta: TASKS }) })
  t.equal(created.status, 202)
  const url = `/tasks/${created.body.taskId}`
  let task: { status: string; inputRequests?: Record<string, { method: string }>; result?: { content: { text: string }[] } } | undefined
  await until(async () => (task = (await call(app, { url, headers: polling })).body).status === 'input_required', 'the question')
  const [key, request] = Object.entries(task!.inputRequests!)[0]!
  t.equal(request.method, 'elicitation/create')
  const update = await call(app, { method: 'POST', url: `${url}/update`, ...json({ inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, _meta: TASKS }) })
  t.equal(update.status, 200)
  await until(async () => (task = (await call(app, { url, headers: polling })).body).status === 'completed', 'the result')
  t.equal(task!.result!.content[0]!.text, 'Hello Ada')

  const waiting = await call(app, { method: 'POST', url: '/tools/wait/calls', ...json({ arguments: {}, _meta: TASKS }) })
  t.equal(waiting.status, 202)
  await until(() => gw.rounds.callers().length === 1, 'the upstream call running')
  const cancel = await call(app, { method: 'POST', url: `/tasks/${waiting.body.taskId}/cancel`, ...json({ _meta: TASKS }) })
  t.equal(cancel.status, 200)
  await until(async () => (await call(app, { url: `/tasks/${waiting.body.taskId}`, headers: polling })).body.status === 'cancelled', 'cancelled')
  await until(() => gw.rounds.callers().length === 0, 'the upstream call ended')
})

t.test('a gateway task keeps the ttl and notify the client asked for, within taskTtlMs', async (t) => {
  const { app } = await serveUpstream(t, oddUpstream, { taskAfterMs: 0, taskTtlMs: 120_000 })
  const created = await call(app, { method: 'POST', url: '/tools/ask/calls', ...json({ arguments: {}, task: { ttl: 60_000, notify: true }, _meta: TASKS }) })
  t.same([created.status, created.body.ttlMs], [202, 60_000], 'a shorter ttl is kept')
  const url = `/tasks/${created.body.taskId}`
  let task: { status: string; inputRequests?: Record<string, unknown> } | undefined
  await until(async () => (task = (await call(app, { url, headers: polling })).body).status === 'input_required', 'the question')
  const [key] = Object.keys(task!.inputRequests!)
  await call(app, { method: 'POST', url: `${url}/update`, ...json({ inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } }, _meta: TASKS }) })
  await until(async () => (await call(app, { url, headers: polling })).body.status === 'completed', 'the result')
  const notes = (await call(app, { url: '/notifications' })).body as { method: string; params: { taskId: string; status: string } }[]
  const statuses = notes.filter((n) => n.method === 'notifications/tasks' && n.params.taskId === created.body.taskId).map((n) => n.params.status)
  t.ok(statuses.includes('input_required') && statuses.at(-1) === 'completed', `notify: each status change queued (${statuses.join(', ')})`)

  const capped = await call(app, { method: 'POST', url: '/tools/ask/calls', ...json({ arguments: {}, task: { ttl: 3_600_000 }, _meta: TASKS }) })
  t.equal(capped.body.ttlMs, 120_000, 'a longer one is cut to taskTtlMs')
  const quiet = await call(app, { method: 'POST', url: '/tools/ask/calls', ...json({ arguments: {}, _meta: TASKS }) })
  t.equal(quiet.body.ttlMs, 120_000, 'none asked: taskTtlMs')
  await call(app, { method: 'POST', url: `/tasks/${capped.body.taskId}/cancel`, ...json({ _meta: TASKS }) })
  await call(app, { method: 'POST', url: `/tasks/${quiet.body.taskId}/cancel`, ...json({ _meta: TASKS }) })
  const after = (await call(app, { url: '/notifications' })).body as { method: string; params: { taskId: string } }[]
  t.notOk(after.some((n) => n.method === 'notifications/tasks' && n.params.taskId === quiet.body.taskId), 'no notify asked: none queued')
})
