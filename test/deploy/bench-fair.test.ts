import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { differences, fairness } from '../../bench/lib/fair.js'
import { Files } from '../../bench/requests.js'
import { phases, serverEnv, type Phase } from '../../bench/workloads.js'
import { freePort, startRedis } from '../helpers/redis-server.js'

// A ratio to bare Fastify means something only if bare answers what ours answers. The bench checks
// every phase that pairs them before measuring (bench/lib/fair.ts); here the same check runs on each
// of those phases, in memory and with Redis (both servers on one redis-server, as the bench starts
// them), so a change that makes them differ fails the suite and not only a bench run.
const root = resolve(import.meta.dirname, '../..')
const scratch = mkdtempSync(join(tmpdir(), 'bench-fair-'))
t.teardown(() => rmSync(scratch, { recursive: true, force: true }))

/**
 * The phase's server `id`, as the bench starts it (from the build `npm test` makes first, with the
 * phase's store: `store` is its Redis URL), on a free loopback port.
 */
async function serve(t: Test, phase: Phase, id: string, store: Record<string, string> = {}): Promise<string> {
  const spec = phase.servers.find((s) => s.id === id)!
  const port = await freePort()
  const child = spawn(process.execPath, spec.args, {
    env: { ...process.env, ...serverEnv(phase, spec, store), HOST: '127.0.0.1', PORT: String(port) },
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

/** What a redis-server holds: the other clients connected, and whose keys (the servers' prefixes, `bench-<pid>:` and `bare-<pid>:`). */
async function seen(url: string): Promise<{ clients: number; prefixes: string[] }> {
  const { Redis } = await import('ioredis')
  const client = new Redis(url)
  try {
    const clients = String(await client.client('LIST')).trim().split('\n').length - 1
    const prefixes = [...new Set((await client.keys('*')).map((k) => k.split(':')[0]!.replace(/-\d+$/, '')))].sort()
    return { clients, prefixes }
  } finally {
    client.disconnect()
  }
}

const PAIRED = ['core', 'list-200', 'notifications', 'notifications-1000']
const all = phases(join(root, 'dist'))
const measured = all.filter((p) => PAIRED.includes(p.id))
t.equal(measured.length, 4, 'the in-memory phases that pair ours with bare')
const twins = all.filter((p) => p.id.startsWith('redis-') && !p.id.startsWith('redis-cluster'))
t.same(
  twins.map((p) => p.id),
  PAIRED.map((id) => `redis-${id}`),
  'each has its Redis twin'
)
t.ok(twins.every((p) => p.redis === true && p.servers.some((s) => s.id === 'bare')), 'the twins pair ours with bare on a redis-server')

for (const phase of [...measured, ...twins]) {
  t.test(`phase ${phase.id}: bare answers what ours answers`, async (t) => {
    let store: Record<string, string> = {}
    if (phase.redis === true) {
      const redis = await startRedis()
      t.teardown(() => redis.stop())
      store = { MCP_REDIS_URL: redis.url }
    }
    const [ours, bare] = await Promise.all([serve(t, phase, 'ours', store), serve(t, phase, 'bare', store)])
    const checked = await fairness(phase, ours, bare, new Files(scratch))
    t.ok(checked.length > 0, 'workloads that pair them')
    for (const { workload, differences } of checked) t.same(differences, [], workload)
    if (store.MCP_REDIS_URL !== undefined) {
      // Both on the store: connected (this server with a subscriber too), and where the workloads
      // write (tasks, queued notifications), each under its own prefix.
      const { clients, prefixes } = await seen(store.MCP_REDIS_URL)
      t.ok(clients >= 3, `both servers connected (${clients} clients)`)
      t.same(prefixes, phase.id.includes('notifications') ? ['bare', 'bench'] : [], 'keys written by both where the workloads write')
    }
  })
}

t.test('the check finds each kind of difference', async (t) => {
  const json = 'application/json; charset=utf-8'
  const answer = (body: string, status = 200, type: string | null = json, group: string | null = null) => ({ status, type, body, group })
  t.same(differences(answer('{"a":1}'), answer('{"a":1}')), [])
  t.match(differences(answer('{"a":1}'), answer('{"a":2}')), [/bodies differ/])
  t.match(differences(answer('{"a":1}'), answer('{"a":1}', 404)), [/status 404 from bare, 200 from ours/])
  t.match(differences(answer('{"a":1}', 500), answer('{"a":1}', 500)), [/ours answers 500, the bench expects 200/])
  t.match(differences(answer('{"a":1}'), answer('{"a":1}', 200, 'text/plain')), [/content type text\/plain from bare/])
  t.match(differences(answer('{"a":1}', 200, json, 'g1'), answer('{"a":1}')), [/message group id from only one/])
  t.same(differences(answer('{"taskId":"x","n":1}'), answer('{"taskId":"y","n":1}')), [], 'ids made per request are not compared')
  t.match(differences(answer('{"taskId":"x","n":1}'), answer('{"taskId":"y","n":2}')), [/but for ids, clocks and sealed state/])
  t.match(differences(answer('{"taskId":"x"}'), answer('oops')), [/bodies differ/], 'a body that is not JSON')
  t.same(differences(answer('', 304), answer('', 304), 304), [])
  t.match(differences(answer('', 304), answer('x', 304), 304), [/a body with a 304/])
  const withHeaders = (headers: Record<string, string>) => ({ ...answer('{"a":1}'), headers })
  const ours = { 'mcp-request-id': 'a.1', 'mcp-protocol-version': '2026-07-28', vary: 'Origin', location: '/tasks/x', 'content-type': json }
  t.same(differences(withHeaders(ours), withHeaders({ ...ours, 'mcp-request-id': 'b.7', location: '/tasks/y' })), [], 'ids made per request: present in both, values not compared')
  const { vary: _, ...noVary } = ours
  t.same(differences(withHeaders(ours), withHeaders(noVary)), ['header vary from ours only'])
  t.same(differences(withHeaders(noVary), withHeaders(ours)), ['header vary from bare only'])
  t.same(differences(withHeaders(ours), withHeaders({ ...ours, vary: 'Origin, Accept' })), ['header vary: Origin, Accept from bare, Origin from ours'])
})
