import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { freePort, startRedis } from '../helpers/redis-server.js'
import { startReceiver, type Answer } from '../helpers/webhook-receiver.js'

// Real server processes (node dist/src/main.js) sharing one real redis-server: pending deliveries
// live in Redis, leased to the instance that attempts them.
const main = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url))
const redis = await startRedis()
t.teardown(() => redis.stop())
let answer: (n: number) => Answer = () => 200
const rx = await startReceiver((n) => answer(n))
t.teardown(() => rx.close())

interface Instance {
  url: string
  process: ChildProcess
}
const running: Instance[] = []
t.teardown(async () => {
  for (const i of running) {
    if (i.process.exitCode === null && i.process.signalCode === null) {
      i.process.kill('SIGTERM')
      await once(i.process, 'exit')
    }
  }
})

async function instance(env: Record<string, string>): Promise<Instance> {
  const port = await freePort()
  let out = ''
  const child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      MCP_REDIS_URL: redis.url,
      MCP_REDIS_PREFIX: 'whc:',
      MCP_WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${rx.port}`,
      // Long against a delivery on a loaded machine (a loopback POST answered at once): a lease that
      // lapses mid-delivery hands the message to the other instance, and it arrives twice. 1 s was
      // not (CI with load average 15-19: 42 deliveries of 32 messages).
      MCP_WEBHOOK_LEASE_MS: '5000',
      MCP_WEBHOOK_BACKOFF_MS: '10',
      ...env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  child.stderr!.on('data', (d: Buffer) => (out += String(d)))
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (child.exitCode !== null || i === 600) throw new Error(`instance did not start within 30 s:\n${out}`)
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const made = { url, process: child }
  running.push(made)
  return made
}

const progress = (i: Instance, token: string) =>
  fetch(`${i.url}/tools/slow_compute/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ arguments: { n: 2 }, _meta: { progressToken: token } })
  }).then((r) => r.json())

// A polls often; B looks only when it queues a message itself, so that what A claims stays A's.
const a = await instance({ MCP_WEBHOOK_POLL_MS: '100' })
const b = await instance({ MCP_WEBHOOK_POLL_MS: '60000' })
const registered = await fetch(`${a.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: rx.url }) })
const hook = (await registered.json()) as { id: string }

t.test('two instances on one Redis deliver each message once', async (t) => {
  t.equal(registered.status, 201)
  await Promise.all(Array.from({ length: 16 }, (_, k) => progress(k % 2 === 0 ? a : b, `p${k}`)))
  const got = await rx.waitFor(32)
  await new Promise((resolve) => setTimeout(resolve, 300))
  const ids = got.map((d) => d.headers['webhook-id'])
  t.equal(got.length, 32, 'no message twice')
  t.equal(new Set(ids).size, 32)
  const seen = new Set(got.map((d) => { const p = JSON.parse(d.body).params; return `${p.progressToken}/${p.progress}` }))
  t.equal(seen.size, 32, 'every progress of every call')
  const queued = await (await fetch(`${b.url}/notifications`)).json()
  t.same(queued, [], 'nothing fell back to the queue')
})

t.test('kill -9 of the instance mid-delivery: another delivers the message', async (t) => {
  const before = rx.got.length
  answer = (n) => (n === before ? 'hang' : 200)
  void progress(a, 'doomed').catch(() => undefined)
  const [held] = (await rx.waitFor(before + 1)).slice(before)
  a.process.kill('SIGKILL')
  await once(a.process, 'exit')
  const id = held!.headers['webhook-id']
  // B looks when it queues a message of its own; the dead instance's lease lapses meanwhile.
  for (let k = 0; k < 60 && !rx.got.slice(before + 1).some((d) => d.headers['webhook-id'] === id); k++) await progress(b, `wake${k}`)
  const again = rx.got.slice(before + 1).filter((d) => d.headers['webhook-id'] === id)
  t.equal(again.length, 1, 'delivered once more, by the survivor, with the same webhook-id')
  t.equal(again[0]!.body, held!.body)
  const log = (await (await fetch(`${b.url}/webhooks/${hook.id}/deliveries`)).json()) as { deliveries: { messageId: string; status: string }[] }
  t.match(log.deliveries.filter((d) => d.messageId === id), [{ status: 'delivered' }])
})
