import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { RequestSpec } from '../bench/lib/h2load.js'
import { Files } from '../bench/requests.js'
import { phases, type Phase } from '../bench/workloads.js'
import { freePort, startRedis } from './redis-server.js'

// A ratio to bare Fastify means something only if bare answers what ours answers: the same status,
// the same JSON (byte for byte where nothing in it is made per request), for every request of every
// phase that measures both, in memory and with Redis. A ceiling that answered less would flatter us.
const root = resolve(import.meta.dirname, '..')
const scratch = mkdtempSync(join(tmpdir(), 'bench-fair-'))
t.teardown(() => rmSync(scratch, { recursive: true, force: true }))

// What is made per request: ids, clocks, and the sealed state (a fresh nonce each time).
const MADE = new Set(['taskId', 'createdAt', 'lastUpdatedAt', 'requestState'])
const stable = (json: string) => JSON.stringify(JSON.parse(json), (key, value) => (MADE.has(key) ? typeof value : value))

interface Answer {
  status: number
  type: string | null
  body: string
  group: string | null
}

/** The phase's server `id`, as the bench starts it (from the build `npm test` makes first), on a free loopback port. */
async function serve(t: Test, phase: Phase, id: string, redisUrl: string): Promise<string> {
  const spec = phase.servers.find((s) => s.id === id)!
  const port = await freePort()
  const child = spawn(process.execPath, spec.args, {
    env: { ...process.env, NODE_OPTIONS: '', ...spec.env, ...(phase.redis === true ? { MCP_REDIS_URL: redisUrl } : {}), HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let err = ''
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk))
  t.teardown(() => {
    child.kill('SIGTERM')
  })
  const base = `http://127.0.0.1:${port}`
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${id} exited ${child.exitCode}: ${err}`)
    const up = await fetch(base + spec.readyPath).then(
      (res) => res.arrayBuffer().then(() => true),
      () => false
    )
    if (up) return base
    await sleep(100)
  }
}

/** One request as h2load sends it (its path or the first of its URIs, its body file, its headers). */
async function ask(base: string, spec: RequestSpec): Promise<Answer> {
  const url = spec.uriFile === undefined ? base + spec.path : readFileSync(spec.uriFile, 'utf8').split('\n')[0]!
  const res = await fetch(url, {
    method: spec.bodyFile === undefined ? 'GET' : 'POST',
    headers: spec.headers ?? {},
    ...(spec.bodyFile === undefined ? {} : { body: readFileSync(spec.bodyFile) })
  })
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text(), group: res.headers.get('mcp-message-group') }
}

const PAIRED = ['core', 'list-200', 'notifications', 'notifications-1000']
const measured = phases(join(root, 'dist')).filter((p) => PAIRED.includes(p.id) || PAIRED.includes(p.id.replace(/^redis-/, '')))
// One redis-server, emptied before each phase (the bench starts one a phase).
const redis = await startRedis()
t.teardown(() => redis.stop())
t.equal(measured.length, 8, 'the phases that pair ours with bare, in memory and with Redis')

for (const phase of measured) {
  t.test(`phase ${phase.id}: bare answers what ours answers`, async (t) => {
    if (phase.redis === true) {
      const admin = new Redis(redis.url)
      await admin.flushall()
      await admin.quit()
    }
    const [ours, bare] = await Promise.all([serve(t, phase, 'ours', redis.url), serve(t, phase, 'bare', redis.url)])
    const files = new Files(scratch)
    for (const workload of phase.workloads) {
      const mine = workload.requests.ours
      const theirs = workload.requests.bare
      if (mine === undefined || theirs === undefined) continue
      const specOf = async (request: typeof mine, base: string) => (typeof request === 'function' ? request(base, files) : request)
      const [spec, other] = await Promise.all([specOf(mine, ours), specOf(theirs, bare)])
      const [answer, b] = await Promise.all([ask(ours, spec), ask(bare, other)])
      t.equal(answer.status, spec.status ?? 200, `${workload.id}: ours answers the status the bench expects`)
      t.equal(b.status, answer.status, `${workload.id}: the same status`)
      if (answer.status === 304) {
        t.equal(b.body, '', `${workload.id}: no body from either`)
        t.equal(answer.body, '')
        continue
      }
      t.equal(b.type, answer.type, `${workload.id}: the same content type`)
      t.equal(b.group !== null, answer.group !== null, `${workload.id}: a group id from both or neither`)
      const volatile = [...MADE].some((key) => answer.body.includes(`"${key}"`))
      if (volatile) t.equal(stable(b.body), stable(answer.body), `${workload.id}: the same JSON but for ids, clocks and sealed state`)
      else t.equal(b.body, answer.body, `${workload.id}: the same bytes`)
    }
  })
}
