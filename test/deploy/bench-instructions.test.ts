import t, { type Test } from 'tap'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { callgrindEvents, callgrindTotal, countedPid, instructionsPerRequest, type InstructionOptions, type WindowCount } from '../../bench/lib/instructions.js'
import { Files } from '../../bench/requests.js'
import { prerequisite } from '../helpers/prerequisites.js'

// The bench's instruction counts (bench/instructions.ts): callgrind's totals, read per window.
const dist = resolve(import.meta.dirname, '../../dist')

t.test("callgrindTotal reads a dump's summary", async (t) => {
  t.equal(callgrindTotal('# callgrind format\nevents: Ir\nsummary: 123456\ntotals: 123999\n'), 123456)
  t.throws(() => callgrindTotal('events: Ir\n'), /without a summary/)
})

t.test("callgrindEvents reads a dump's summary by event name", async (t) => {
  const dump = '# callgrind format\nevents: Ir Dr Dw I1mr D1mr D1mw\nsummary: 1000 300 200 40 30 5\ntotals: 1000 300 200 40 30 5\n'
  t.same(callgrindEvents(dump), { Ir: 1000, Dr: 300, Dw: 200, I1mr: 40, D1mr: 30, D1mw: 5 })
  // An event that counted nothing at the end of the line may be left off.
  t.same(callgrindEvents('events: Ir I1mr\nsummary: 7\n'), { Ir: 7, I1mr: 0 })
  t.throws(() => callgrindEvents('summary: 7\n'), /without its events/)
})

/** bare Fastify's echo, counted by `instructionsPerRequest` in a directory of its own; the counted process's pid. */
async function countEcho(t: Test, options: InstructionOptions): Promise<{ counts: WindowCount[]; pid: number }> {
  prerequisite('callgrind_control')
  prerequisite('h2load')
  const dir = mkdtempSync(join(tmpdir(), 'bench-instructions-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const files = new Files(dir)
  const spec = { id: 'bare', args: [join(dist, 'bench/servers/bare.js')], env: { TOOLS: '1' }, readyPath: '/tools' }
  const echo = { path: '/tools/echo/calls', bodyFile: files.body({ arguments: { text: 'hello' } }), headers: { 'content-type': 'application/json' } }
  const counts = await instructionsPerRequest(spec, async () => echo, dir, options)
  const pid = countedPid(readdirSync(dir), 'cg-bare')
  return { counts, pid }
}

t.test('countedPid finds the counted process among the output files', async (t) => {
  t.equal(countedPid(['body-1.json', 'cg-bare.4711', 'cg-bare.4711.1-01', 'cg-bare.4711.1-02'], 'cg-bare'), 4711)
  t.equal(countedPid(['cg-ours.12.1-01'], 'cg-ours'), 12)
  t.throws(() => countedPid(['body-1.json'], 'cg-bare'), /no callgrind output named cg-bare/)
  t.throws(() => countedPid(['cg-bare.x'], 'cg-bare'), /no callgrind output/)
})

t.test('a server under callgrind: instructions per request of each window, and nothing left running', async (t) => {
  const { counts, pid } = await countEcho(t, { warm: 200, window: 200, windows: 2, connections: 4 })
  t.equal(counts.length, 2, 'one count a window')
  // An echo through Fastify runs some 10^5 instructions once compiled; these early requests, with
  // the JIT still at work (in threads of its own, in `all`), up to ~10^6 on a busy machine.
  // Nothing counted, or a total not divided by the window's requests, would be far outside.
  for (const { main, all, misses } of counts) {
    t.ok(main > 20_000 && main < 20_000_000, `${main} instructions a request in the main thread`)
    // Every thread together: the main thread and whatever V8's ran beside it.
    t.ok(all >= main && all < 40_000_000, `${all} in all threads`)
    t.equal(misses, undefined, 'no cache simulated unless asked')
  }
  t.notOk(existsSync(`/proc/${pid}`), 'the counted process was stopped')
})

t.test('with the cache simulated: first-level misses a request beside the instructions', async (t) => {
  const { counts, pid } = await countEcho(t, { warm: 200, window: 200, windows: 1, connections: 4, cache: true })
  const { main, misses } = counts[0]!
  t.ok(main > 20_000 && main < 20_000_000, `${main} instructions a request in the main thread`)
  t.ok(misses !== undefined, 'misses counted')
  // A request through Fastify misses the first-level caches some 10^3 times (the code it runs
  // does not fit them); never more often than it runs an instruction, never not at all.
  for (const [name, n] of Object.entries(misses!)) t.ok(n > 10 && n < main, `${n.toFixed(0)} ${name} misses a request`)
  t.notOk(existsSync(`/proc/${pid}`), 'the counted process was stopped')
})
