import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { nginxConf } from '../helpers/cluster-harness.js'
import { prerequisite } from '../helpers/prerequisites.js'
import { reservePort, startRedis, type RedisServer } from '../helpers/redis-server.js'
import { startReceiver } from '../helpers/webhook-receiver.js'

// Chaos (issue #36): two instances behind nginx on one Redis, under load from several clients, while
// Redis is killed (SIGKILL) and started again twice and one instance is killed and started again
// once. Every call acknowledged ends with its answer, every task acknowledged (202) ends (completed,
// or failed because the instance running it died), and every task's last notification reaches the
// webhook or /notifications: nothing acknowledged is lost or left pending past its deadline. Redis
// keeps an append-only file synced at each write, as a deployment that must not lose tasks does.
// Verdicts never depend on timing: the schedule only decides when things break, and each end has a
// generous deadline (a busy machine is slower, not wrong).
const main = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url))
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
const LOST = 'The server instance running this task stopped before it finished'
const TERMINAL = new Set(['completed', 'failed', 'cancelled'])

let redis: RedisServer = await startRedis({ persist: true })
const rx = await startReceiver((n) => (n % 7 === 3 ? 500 : 200)) // some deliveries must be tried again
const dir = mkdtempSync(join(tmpdir(), 'mcp-chaos-'))
const ports = await Promise.all([reservePort(), reservePort(), reservePort()])
const [nginxPort, ...instancePorts] = ports.map((p) => p.port) as [number, number, number]
const host = `127.0.0.1:${nginxPort}`
const base = `http://${host}`
const instances: ChildProcess[] = []
const logs: string[] = ['', '']
const others: ChildProcess[] = []

t.teardown(async () => {
  for (const child of [...instances, ...others]) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  }
  await rx.close()
  await redis.stop()
  rmSync(dir, { recursive: true, force: true })
})

async function healthy(url: string, what: string, child?: ChildProcess): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (child !== undefined && child.exitCode !== null) throw new Error(`${what} exited:\n${logs.join('\n')}`)
    if (await fetch(url).then((r) => r.ok, () => false)) return
    await sleep(50)
  }
  throw new Error(`${what} did not become healthy within 60 s`)
}

async function startInstance(n: number): Promise<void> {
  const child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(instancePorts[n]),
      LOG_LEVEL: 'warn',
      MCP_REDIS_URL: redis.url,
      MCP_REDIS_PREFIX: 'chaos:',
      MCP_STATE_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64url')}`,
      MCP_ALLOWED_HOSTS: host,
      MCP_TRUST_PROXY: '127.0.0.1',
      MCP_IDEMPOTENCY_LEASE_MS: '2000',
      // Longer than each Redis outage here (a kill, 1.5 s, a start, the driver's reconnect): a lease
      // that lapses during one fails a task its live instance still runs, as docs/tasks.md says.
      // 3 s did once in CI. The killed instance's tasks still fail well within the deadline.
      MCP_TASK_LEASE_MS: '8000',
      MCP_WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${rx.port}`,
      MCP_WEBHOOK_BACKOFF_MS: '50',
      MCP_WEBHOOK_MAX_BACKOFF_MS: '500',
      MCP_WEBHOOK_LEASE_MS: '2000',
      MCP_WEBHOOK_POLL_MS: '100'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  child.stdout!.on('data', (d: Buffer) => (logs[n] += String(d)))
  child.stderr!.on('data', (d: Buffer) => (logs[n] += String(d)))
  instances[n] = child
  await healthy(`http://127.0.0.1:${instancePorts[n]}/health`, `instance ${n}`, child)
}

for (const p of ports.slice(1)) await p.release()
await startInstance(0)
await startInstance(1)
writeFileSync(join(dir, 'nginx.conf'), nginxConf(dir, nginxPort, instancePorts))
await ports[0]!.release()
const nginx = spawn(prerequisite('nginx'), ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' })
others.push(nginx)
await healthy(`${base}/health`, 'nginx')

interface Answer {
  status: number
  body: any
  upstream: string | null
  group: string | null
}
/** One request through nginx; a connection that breaks is status 0. */
async function send(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  try {
    const res = await fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(30_000)
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), upstream: res.headers.get('x-upstream'), group: res.headers.get('mcp-message-group') }
  } catch {
    return { status: 0, body: undefined, upstream: null, group: null }
  }
}

/** Not an answer, but a reason to try again: the store or an instance is away, or a claim is held. */
const transient = (status: number): boolean => status === 0 || status === 409 || status === 429 || status === 502 || status === 503 || status === 504

t.test('under load, Redis killed twice and an instance once: everything acknowledged ends', async (t) => {
  const hook = await send('/webhooks', { body: { url: rx.url } })
  t.equal(hook.status, 201, 'a webhook for the connection')

  let loading = true
  const counts = { calls: 0, callRetries: 0, tasksAcknowledged: 0 }
  const refusals = new Map<number, number>()
  const calls: { id: string; text: string; answer?: Answer }[] = []
  const tasks: { taskId: string; upstream: string | null; at: number }[] = []
  // Until instance 0 is healthy again, only its killed process can have acknowledged a task on its
  // address: a 202 sent just before the kill may reach the client after it.
  let backAt = Number.POSITIVE_INFINITY
  const started = Date.now()
  const events: string[] = []
  const mark = (what: string) => events.push(`${what} at ${Date.now() - started} ms`)
  const killedUpstream = `127.0.0.1:${instancePorts[0]}`

  // An echo with an Mcp-Request-Id, retried with the same id until it is answered: a retry after a
  // first attempt that ran is a replay (idempotency), one whose claim died with its instance runs
  // once the claim's lease lapses. Its deadline: 60 s.
  // Paced, and at most 300 each: the anonymous connection may hold 1,000 replayable calls (kept
  // 10 minutes), and a quiet machine made more than that in 12 s (then 429 until they expire).
  const caller = async (w: number) => {
    for (let k = 0; loading && k < 300; k++) {
      if (k > 0) await sleep(30)
      const id = `w${w}-${k}`
      const text = `hello ${id}`
      const one = { id, text } as (typeof calls)[number]
      calls.push(one)
      counts.calls++
      const deadline = Date.now() + 60_000
      for (;;) {
        const res = await send('/tools/echo/calls', { headers: { 'mcp-request-id': id }, body: { arguments: { text } } })
        if (!transient(res.status) || Date.now() > deadline) {
          one.answer = res
          break
        }
        counts.callRetries++
        await sleep(100)
      }
    }
  }
  // Tasks: a 202 is an acknowledgement; a refusal (the store or an instance away, or the client's
  // share of running tasks full: 429) is tried again as a new task.
  const tasker = async () => {
    while (loading) {
      const res = await send('/tools/slow_compute/calls', { body: { arguments: { n: 3 }, task: { notify: true }, _meta: TASKS } })
      if (res.status === 202) {
        counts.tasksAcknowledged++
        tasks.push({ taskId: res.body.taskId as string, upstream: res.upstream, at: Date.now() })
      } else {
        refusals.set(res.status, (refusals.get(res.status) ?? 0) + 1)
        await sleep(100)
      }
    }
  }
  const load = Promise.all([caller(0), caller(1), caller(2), tasker(), tasker()])

  const restartRedis = async () => {
    mark('Redis killed')
    redis.process.kill('SIGKILL')
    await once(redis.process, 'exit')
    await sleep(1500)
    redis = await startRedis({ persist: true, after: redis })
    mark('Redis back')
  }
  await sleep(2000)
  await restartRedis()
  await sleep(2500)
  mark('instance 0 killed')
  instances[0]!.kill('SIGKILL')
  await once(instances[0]!, 'exit')
  await sleep(1500)
  await startInstance(0)
  backAt = Date.now()
  mark('instance 0 back')
  await sleep(2500)
  await restartRedis()
  await sleep(2500)
  loading = false
  await load
  t.same([...refusals.keys()].filter((s) => !transient(s)), [], 'a task refused only while something is away or the share is full')

  // Every call answered with its own text.
  const wrong = calls.filter((c) => c.answer?.status !== 200 || c.answer.body?.content?.[0]?.text !== c.text)
  t.same(wrong.map((c) => ({ id: c.id, status: c.answer?.status, body: c.answer?.body })), [], `all ${calls.length} calls answered with their text`)

  // Every task ends within a minute: completed with its sum, or failed because its instance died
  // (only tasks the killed instance took before it died).
  const ends = new Map<string, any>()
  const deadline = Date.now() + 60_000
  while (ends.size < tasks.length && Date.now() < deadline) {
    for (const task of tasks) {
      if (ends.has(task.taskId)) continue
      const res = await send(`/tasks/${task.taskId}`, { headers: { 'mcp-meta': JSON.stringify(TASKS) } })
      if (res.status === 200 && TERMINAL.has(res.body.status)) ends.set(task.taskId, res.body)
      else t.ok(res.status === 200 || transient(res.status), `a poll answers the task or asks to wait (${res.status})`)
    }
    if (ends.size < tasks.length) await sleep(250)
  }
  t.equal(ends.size, tasks.length, `all ${tasks.length} tasks ended`)
  const byEnd = { completed: 0, lost: 0, other: [] as unknown[] }
  for (const task of tasks) {
    const end = ends.get(task.taskId)
    if (end === undefined) continue
    if (end.status === 'completed' && end.result?.structuredContent?.sum === 6) byEnd.completed++
    else if (end.status === 'failed' && end.statusMessage === LOST && task.upstream === killedUpstream && task.at < backAt) byEnd.lost++
    else byEnd.other.push({ task, end })
  }
  t.same(byEnd.other, [], 'each completed with its sum, or failed because the instance running it was killed')

  // Each task's last notification (notifications/tasks with its end) reached the webhook, or came
  // back to /notifications after its attempts: drain /notifications, acknowledging each group.
  const seen = new Set<string>()
  const note = (m: any) => {
    if (m?.method === 'notifications/tasks' && TERMINAL.has(m.params?.status)) seen.add(`${m.params.taskId as string}:${m.params.status as string}`)
  }
  const missing = () => [...ends.values()].filter((e) => !seen.has(`${e.taskId as string}:${e.status as string}`))
  const noteDeadline = Date.now() + 60_000
  while (missing().length > 0 && Date.now() < noteDeadline) {
    for (const d of rx.got) note(JSON.parse(d.body))
    const queued = await send('/notifications')
    if (queued.status === 200 && Array.isArray(queued.body)) queued.body.forEach(note)
    if (queued.group !== null) await send('/notifications', { method: 'POST', headers: { 'mcp-message-group': queued.group } })
    else await sleep(250)
  }
  // An instance killed between a task's end and its notification leaves the end marked pending under
  // its lease: once the lease lapses, the other instance's sweep queues the notification.
  const unnotified = missing().map((e) => {
    const task = tasks.find((k) => k.taskId === e.taskId)!
    const on = task.upstream === killedUpstream ? 'instance 0' : 'instance 1'
    return `${e.taskId as string} (${e.status as string} on ${on}, created at ${task.at - started} ms, last updated at ${Date.parse(e.lastUpdatedAt) - started} ms)`
  })
  t.comment(`chaos: ${events.join(', ')}`)
  t.same(unnotified, [], `all ${ends.size} task ends notified (webhook or /notifications)`)
  t.comment(
    `chaos: ${calls.length} calls answered (${counts.callRetries} retries); ${counts.tasksAcknowledged} tasks acknowledged ` +
      `(${byEnd.completed} completed, ${byEnd.lost} failed with their instance); refused by status ${JSON.stringify(Object.fromEntries(refusals))}; ` +
      `${rx.got.length} webhook deliveries, ${seen.size} task ends notified`
  )
  t.ok(byEnd.completed > 0 && calls.length > 0, 'the load did work')
})
