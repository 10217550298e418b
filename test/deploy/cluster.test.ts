import t from 'tap'
import { startCluster } from '../helpers/cluster-harness.js'

// Three instances behind nginx, sharing one Redis: every flow below crosses instances. Needs the
// redis-server and nginx binaries (Debian packages of the same names); without them it fails.
// MCP_TEST_REDIS=redis-cluster (test/deploy/cluster-redis-cluster.test.ts): the same, on a Redis Cluster.
const cluster = await startCluster(3, process.env.MCP_TEST_REDIS === 'redis-cluster' ? 'redis-cluster' : 'redis')
t.teardown(() => cluster.stop())

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const LEGACY = { 'mcp-protocol-version': '2025-11-25' }
// Tasks, and elicitation for the task that asks for approval half way.
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: {} } }

interface Answer {
  status: number
  headers: Headers
  body: any
  upstream: string
}

// nginx round-robin is strictly cyclic for requests sent one after another: `order` is the cycle,
// learned first; `next` the upstream the next request will reach. Used only to steer a request to
// another instance; what each answer's X-Upstream says is what the assertions check.
let order: string[] = []
let sent = 0
const next = () => order[sent % order.length]

// tasks/* must declare the Tasks extension on each request (here in Mcp-Meta, GET or POST).
const DECLARES_TASKS = { 'mcp-meta': JSON.stringify({ 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }) }

async function req(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  sent++
  const res = await fetch(cluster.url + path, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(path.startsWith('/tasks/') ? DECLARES_TASKS : {}), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text), upstream: res.headers.get('x-upstream') ?? '' }
}

/** Send cheap requests until the next one will reach an instance other than `avoid`. */
async function awayFrom(...avoid: string[]): Promise<void> {
  for (let i = 0; i < 6 && avoid.includes(next()!); i++) await req('GET', '/health')
}

async function drainNotifications(): Promise<unknown[]> {
  const all: unknown[] = []
  for (let i = 0; i < 20; i++) {
    const got = await req('GET', '/notifications')
    if (got.body.length === 0) break
    all.push(...got.body)
    await req('POST', '/notifications', undefined, { 'mcp-message-group': got.headers.get('mcp-message-group')! })
  }
  return all
}

async function pollTask(id: string, done: (b: any) => boolean): Promise<{ body: any; upstreams: Set<string> }> {
  const upstreams = new Set<string>()
  for (let i = 0; i < 100; i++) {
    const got = await req('GET', `/tasks/${id}`)
    upstreams.add(got.upstream)
    if (done(got.body)) return { body: got.body, upstreams }
    await sleep(100)
  }
  throw new Error(`task ${id} never got there`)
}

t.test('nginx spreads requests round-robin over the three instances', async (t) => {
  const seen = []
  for (let i = 0; i < 3; i++) seen.push((await req('GET', '/health')).upstream)
  t.equal(new Set(seen).size, 3, `three instances: ${seen.join(', ')}`)
  order = seen
  sent = 0
  t.same(new Set(seen), new Set(cluster.instances.map((i) => i.upstream)))
  const ready = await req('GET', '/ready')
  t.same([ready.status, ready.body], [200, { status: 'ready' }], 'ready: Redis answers')
})

t.test('MRTR: update_work_item in three rounds, each on another instance', async (t) => {
  const args = { workItemId: 4522, fields: { 'System.State': 'Resolved' } }
  const _meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }
  const r1 = await req('POST', '/tools/update_work_item/calls', { arguments: args, _meta })
  t.equal(r1.body.resultType, 'input_required')
  const r2 = await req('POST', '/tools/update_work_item/calls', {
    arguments: args,
    _meta,
    requestState: r1.body.requestState,
    inputResponses: { resolution: { action: 'accept', content: { resolution: 'Duplicate' } } }
  })
  t.same(Object.keys(r2.body.inputRequests), ['duplicate_of'])
  const r3 = await req('POST', '/tools/update_work_item/calls', {
    arguments: args,
    _meta,
    requestState: r2.body.requestState,
    inputResponses: { duplicate_of: { action: 'accept', content: { duplicateOfId: 4301 } } }
  })
  t.equal(r3.body.content[0].text, 'Bug #4522 resolved as Duplicate of Bug #4301. State set to Resolved and duplicate link created.')
  t.equal(new Set([r1.upstream, r2.upstream, r3.upstream]).size, 3, 'three rounds, three instances')
  const plain = await req('POST', '/tools/update_work_item/calls', { arguments: { workItemId: 7, fields: { 'System.Title': 'x' } }, _meta })
  t.equal(plain.body.content[0].text, 'Bug #7 updated. State set to unchanged.', 'no rule fires: nothing is asked')
})

t.test('legacy elicitation: answered through /requests and /responses while the call waits on another instance', async (t) => {
  const init = await req('POST', '/initialize', { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'legacy', version: '1' } }, LEGACY)
  t.equal(init.status, 200)
  const callsAt = next()!
  const pending = req('POST', '/tools/get_weather/calls', { arguments: {} }, LEGACY)
  let asked: Answer | undefined
  for (let i = 0; i < 50; i++) {
    asked = await req('POST', '/requests', undefined, LEGACY)
    if (asked.status === 200) break
    await sleep(50)
  }
  t.same([asked!.status, asked!.body.method], [200, 'elicitation/create'])
  await awayFrom(callsAt)
  const answered = await req('POST', '/responses', { action: 'accept', content: { location: 'Lima' } }, { ...LEGACY, 'mcp-request-id': asked!.headers.get('mcp-request-id')! })
  t.equal(answered.status, 202)
  const call = await pending
  t.match(call.body.content[0].text, /^Weather in Lima: /)
  t.equal(call.upstream, callsAt)
  t.not(answered.upstream, call.upstream, `the call waited on ${call.upstream}; the answer came through ${answered.upstream}`)
})

t.test('notifications: delivered by one instance, acknowledged through another', async (t) => {
  await drainNotifications()
  const work = await req('POST', '/tools/slow_compute/calls', { arguments: { n: 2 }, _meta: { progressToken: 'p-1' } })
  t.same(work.body.structuredContent, { sum: 3 })
  const first = await req('GET', '/notifications')
  const group = first.headers.get('mcp-message-group')!
  t.same(
    first.body.map((n: any) => [n.method, n.params.progressToken, n.params.progress]),
    [['notifications/progress', 'p-1', 1], ['notifications/progress', 'p-1', 2]]
  )
  const again = await req('GET', '/notifications')
  t.same([again.headers.get('mcp-message-group'), again.upstream !== first.upstream], [group, true], 'the same group from another instance until acknowledged')
  await awayFrom(first.upstream)
  const ack = await req('POST', '/notifications', undefined, { 'mcp-message-group': group })
  t.equal(ack.status, 202)
  t.not(ack.upstream, first.upstream, `delivered by ${first.upstream}, acknowledged through ${ack.upstream}`)
  const after = await req('GET', '/notifications')
  t.same(after.body, [], 'acknowledged for every instance')
})

t.test('notifications/cancelled through another instance stops a running call', async (t) => {
  const callsAt = next()!
  const started = Date.now()
  const pending = req('POST', '/tools/slow_compute/calls', { arguments: { n: 60 } }, { 'mcp-request-id': 'cluster-cancel-1' })
  await sleep(800)
  await awayFrom(callsAt)
  const cancel = await req('POST', '/notifications', [{ method: 'notifications/cancelled', params: { requestId: 'cluster-cancel-1', reason: 'user hit stop' } }])
  t.equal(cancel.status, 202)
  const call = await pending
  t.same([call.body.isError, call.body.content[0].text], [true, 'user hit stop'])
  t.ok(Date.now() - started < 10_000, 'long before its 30 s of work')
  t.not(cancel.upstream, call.upstream, `ran on ${call.upstream}, cancelled through ${cancel.upstream}`)
})

t.test('idempotent retry on another instance replays the first answer', async (t) => {
  const first = await req('POST', '/tools/echo/calls', { arguments: { text: 'once' } }, { 'mcp-request-id': 'cluster-idem-1' })
  const retry = await req('POST', '/tools/echo/calls', { arguments: { text: 'once' } }, { 'mcp-request-id': 'cluster-idem-1' })
  t.same([retry.status, retry.body, retry.headers.get('idempotent-replayed')], [200, first.body, 'true'])
  t.not(retry.upstream, first.upstream)
  const conflict = await req('POST', '/tools/echo/calls', { arguments: { text: 'twice' } }, { 'mcp-request-id': 'cluster-idem-1' })
  t.equal(conflict.status, 409)
})

t.test('tasks: created on one instance; polled, updated and cancelled through the others', async (t) => {
  const created = await req('POST', '/tools/slow_compute/calls', { arguments: { n: 3 }, _meta: TASKS })
  t.equal(created.status, 202)
  t.equal(created.headers.get('location'), `/tasks/${created.body.taskId}`)
  const done = await pollTask(created.body.taskId, (b) => b.status === 'completed')
  t.same(done.body.result.structuredContent, { sum: 6 })
  t.ok([...done.upstreams].some((u) => u !== created.upstream), `created on ${created.upstream}, polled through ${[...done.upstreams].join(', ')}`)

  const approval = await req('POST', '/tools/needs_input_task/calls', { _meta: TASKS })
  const asking = await pollTask(approval.body.taskId, (b) => b.status === 'input_required')
  const key = Object.keys(asking.body.inputRequests)[0]!
  await awayFrom(approval.upstream)
  const update = await req('POST', `/tasks/${approval.body.taskId}/update`, { inputResponses: { [key]: { action: 'accept', content: { approve: true } } } })
  t.equal(update.status, 200)
  t.not(update.upstream, approval.upstream, `runs on ${approval.upstream}, answered through ${update.upstream}`)
  t.equal((await pollTask(approval.body.taskId, (b) => b.status === 'completed')).body.result.content[0].text, 'Deployed.')

  const long = await req('POST', '/tools/slow_compute/calls', { arguments: { n: 60 }, _meta: TASKS })
  await pollTask(long.body.taskId, (b) => b.statusMessage !== undefined)
  await awayFrom(long.upstream)
  const cancel = await req('POST', `/tasks/${long.body.taskId}/cancel`, {})
  t.equal(cancel.status, 200)
  t.not(cancel.upstream, long.upstream, `runs on ${long.upstream}, cancelled through ${cancel.upstream}`)
  const cancelled = await pollTask(long.body.taskId, (b) => b.status === 'cancelled')
  t.equal(cancelled.body.status, 'cancelled')
})

t.test('kill -9 of one instance under load: the others keep serving, no state is lost', async (t) => {
  await drainNotifications()
  // State that lives on: queued notifications, a queued server-to-client request, a running task.
  await req('POST', '/tools/slow_compute/calls', { arguments: { n: 2 }, _meta: { progressToken: 'before-kill' } })
  const task = await req('POST', '/tools/slow_compute/calls', { arguments: { n: 60 }, _meta: TASKS })
  const victim = cluster.instances.find((i) => i.upstream === task.upstream)!
  const waiting = req('POST', '/tools/get_weather/calls', { arguments: {} }, LEGACY)
  for (let i = 0; i < 50 && (await req('GET', `/tasks/${task.body.taskId}`)).body.statusMessage === undefined; i++) await sleep(50)

  let stop = false
  const statuses: number[] = []
  const lost: string[] = []
  // GETs (nginx retries them on the next instance) and tool calls (POST: not retried by nginx).
  const load = Array.from({ length: 4 }, async (_, w) => {
    for (let i = 0; !stop && i < 400; i++) {
      const id = `load-${w}-${i}`
      const res = await (i % 2 === 0
        ? fetch(`${cluster.url}/tools`, { headers: { 'mcp-request-id': id } })
        : fetch(`${cluster.url}/tools/echo/calls`, { method: 'POST', headers: { 'mcp-request-id': id, 'content-type': 'application/json' }, body: JSON.stringify({ arguments: { text: id } }) })
      ).catch(() => undefined)
      statuses.push(res?.status ?? 0)
      await res?.arrayBuffer()
      if (res?.status !== 200 && i % 2 === 1) lost.push(id)
    }
  })
  // Counted, not timed: a busy machine makes the run longer, never smaller. 20 answers before the
  // kill, then 20 more after it (the load stops by itself after 1,600).
  let done = false
  const finished = Promise.all(load).then(() => void (done = true))
  const answers = async (n: number) => {
    while (statuses.length < n && !done) await sleep(20)
  }
  await answers(20)
  victim.process.kill('SIGKILL')
  const atKill = statuses.length
  await answers(atKill + 20)
  stop = true
  await finished
  const failed = statuses.filter((s) => s < 200 || s >= 400)
  t.ok(statuses.length >= atKill + 20 && atKill >= 20, `${statuses.length} requests under load, ${atKill} of them before the kill`)
  t.ok(failed.every((s) => s === 502), `only requests in flight on the killed instance failed (${failed.length} of ${statuses.length})`)
  t.ok(failed.length <= 8, 'a handful at most')
  // A failed call retried with its Mcp-Request-Id: 409 while the dead instance's claim lasts, then it runs.
  for (const id of lost) {
    let retry: Answer | undefined
    for (let i = 0; i < 60; i++) {
      retry = await req('POST', '/tools/echo/calls', { arguments: { text: id } }, { 'mcp-request-id': id })
      if (retry.status !== 409) break
      await sleep(100)
    }
    t.same([retry!.status, retry!.body.content[0].text], [200, id], `${id}, lost with the instance, retried`)
  }

  const after: string[] = []
  for (let i = 0; i < 9; i++) {
    const res = await req(i % 2 === 0 ? 'GET' : 'POST', i % 2 === 0 ? '/tools' : '/tools/echo/calls', i % 2 === 0 ? undefined : { arguments: { text: 'still here' } })
    t.equal(res.status, 200, `request ${i} after the kill`)
    after.push(res.upstream)
  }
  t.notOk(after.includes(victim.upstream), 'nginx no longer sends anything to the dead instance')

  const notes = await drainNotifications()
  const progress = notes.filter((n: any) => n.params?.progressToken === 'before-kill')
  t.equal(progress.length, 2, 'the notifications queued before the kill are all there')
  const asked = await req('POST', '/requests', undefined, LEGACY)
  t.same([asked.status, asked.body.method], [200, 'elicitation/create'], 'the queued request is still there')
  const answered = await req('POST', '/responses', { action: 'accept', content: { location: 'Oslo' } }, { ...LEGACY, 'mcp-request-id': asked.headers.get('mcp-request-id')! })
  t.equal(answered.status, 202, 'and answerable through any instance')
  const weather = await waiting
  if (weather.status === 200) t.match(weather.body.content[0].text, /^Weather in Oslo/, `the waiting call (on ${weather.upstream}) got it`)
  else t.equal(weather.status, 502, 'the waiting call died with its instance')
  const kept = await req('GET', `/tasks/${task.body.taskId}`)
  t.same([kept.status, kept.body.status], [200, 'working'], 'the task record survived its instance')
  const cancel = await req('POST', `/tasks/${task.body.taskId}/cancel`, {})
  t.equal(cancel.status, 200)
  t.equal((await req('GET', `/tasks/${task.body.taskId}`)).body.status, 'cancelled', 'and can still be cancelled')
})
