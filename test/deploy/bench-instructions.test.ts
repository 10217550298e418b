import t from 'tap'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { callgrindTotal, instructionsPerRequest } from '../../bench/lib/instructions.js'
import { Files } from '../../bench/requests.js'
import { prerequisite } from '../helpers/prerequisites.js'

// The bench's instruction counts (bench/instructions.ts): callgrind's totals, read per window.
const dist = resolve(import.meta.dirname, '../../dist')

t.test("callgrindTotal reads a dump's summary", async (t) => {
  t.equal(callgrindTotal('# callgrind format\nevents: Ir\nsummary: 123456\ntotals: 123999\n'), 123456)
  t.throws(() => callgrindTotal('events: Ir\n'), /without a summary/)
})

t.test('a server under callgrind: instructions per request of each window, and nothing left running', async (t) => {
  prerequisite('callgrind_control')
  prerequisite('h2load')
  const dir = mkdtempSync(join(tmpdir(), 'bench-instructions-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const files = new Files(dir)
  const spec = { id: 'bare', args: [join(dist, 'bench/servers/bare.js')], env: { TOOLS: '1' }, readyPath: '/tools' }
  const echo = { path: '/tools/echo/calls', bodyFile: files.body({ arguments: { text: 'hello' } }), headers: { 'content-type': 'application/json' } }
  const counts = await instructionsPerRequest(spec, async () => echo, dir, { warm: 200, window: 200, windows: 2, connections: 4 })
  t.equal(counts.length, 2, 'one count a window')
  // An echo through Fastify runs some 10^5 instructions once compiled; these early requests, with
  // the JIT still at work (in threads of its own, in `all`), up to ~10^6 on a busy machine.
  // Nothing counted, or a total not divided by the window's requests, would be far outside.
  for (const { main, all } of counts) {
    t.ok(main > 20_000 && main < 20_000_000, `${main} instructions a request in the main thread`)
    // Every thread together: the main thread and whatever V8's ran beside it.
    t.ok(all >= main && all < 40_000_000, `${all} in all threads`)
  }
  const pid = Number(readdirSync(dir).find((f) => /^cg-bare\.\d+/.test(f))!.slice('cg-bare.'.length).split(/\D/)[0])
  t.notOk(existsSync(`/proc/${pid}`), 'the counted process was stopped')
})
