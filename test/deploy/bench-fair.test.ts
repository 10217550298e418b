import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { differences, fairness } from '../../bench/lib/fair.js'
import { Files } from '../../bench/requests.js'
import { phases, type Phase } from '../../bench/workloads.js'
import { freePort } from '../helpers/redis-server.js'

// A ratio to bare Fastify means something only if bare answers what ours answers. The bench checks
// every phase that pairs them before measuring (bench/lib/fair.ts, in memory and with Redis, where
// it starts the servers anyway); here the same check runs on the in-memory phases, as the bench
// starts their servers, so a change that makes them differ fails the suite and not only a bench run.
const root = resolve(import.meta.dirname, '../..')
const scratch = mkdtempSync(join(tmpdir(), 'bench-fair-'))
t.teardown(() => rmSync(scratch, { recursive: true, force: true }))

/** The phase's server `id`, as the bench starts it (from the build `npm test` makes first), on a free loopback port. */
async function serve(t: Test, phase: Phase, id: string): Promise<string> {
  const spec = phase.servers.find((s) => s.id === id)!
  const port = await freePort()
  const child = spawn(process.execPath, spec.args, {
    env: { ...process.env, ...spec.env, HOST: '127.0.0.1', PORT: String(port) },
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

const PAIRED = ['core', 'list-200', 'notifications', 'notifications-1000']
const all = phases(join(root, 'dist'))
const measured = all.filter((p) => PAIRED.includes(p.id))
t.equal(measured.length, 4, 'the in-memory phases that pair ours with bare')
t.same(
  all.filter((p) => p.id.startsWith('redis-') && !p.id.startsWith('redis-cluster')).map((p) => p.id),
  PAIRED.map((id) => `redis-${id}`),
  'each has its Redis twin, which the bench checks the same way before measuring'
)

for (const phase of measured) {
  t.test(`phase ${phase.id}: bare answers what ours answers`, async (t) => {
    const [ours, bare] = await Promise.all([serve(t, phase, 'ours'), serve(t, phase, 'bare')])
    const checked = await fairness(phase, ours, bare, new Files(scratch))
    t.ok(checked.length > 0, 'workloads that pair them')
    for (const { workload, differences } of checked) t.same(differences, [], workload)
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
