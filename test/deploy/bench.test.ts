import t from 'tap'
import { createHash } from 'node:crypto'
import { parseSummary, percentiles, terms } from '../../bench/lib/parse.js'
import { LEARNED_SCRIPTS, RespCommands, perRequest } from '../../bench/lib/redis-proxy.js'
import { roundTripTable, scriptNames } from '../../bench/lib/roundtrips.js'
import { svg } from '../../bench/chart.js'
import { visitOrder } from '../../bench/lib/procs.js'
import { checks, growth, median, pairedRatios, soakGrowth, table, verdicts, workloads, type Measurement, type Results } from '../../bench/report.js'

// The benchmark's own arithmetic and output, on a fixture: the real bench (npm run bench) is not
// part of npm test.
const m = (workload: string, target: string, rps: number, p99Ms: number): Measurement => ({
  workload,
  target,
  rps,
  p50Ms: p99Ms / 4,
  p99Ms,
  cpuUsPerRequest: 1e6 / rps / 2,
  bytesPerResponse: 300,
  rssMb: 80,
  peakMb: 90,
  runs: [{ rps, p50Ms: p99Ms / 4, p99Ms, cpuUsPerRequest: 1e6 / rps / 2 }]
})

const fixture = (): Results => ({
  meta: { date: '2026-11-22T00:00:00Z', mode: 'full', cpu: 'Test CPU <2 cores>', reps: 3 },
  measurements: [
    m('tools/call echo', 'ours', 45_000, 1.2),
    m('tools/call echo', 'bare', 50_000, 1.0),
    m('tools/call echo', 'sdk-v1', 1_000, 40),
    m('tools/call echo', 'sdk-v2', 3_000, 20),
    m('tools/list 304 (200 tools)', 'ours', 40_000, 1),
    m('tools/list 304 (200 tools)', 'bare', 50_000, 1),
    m('MRTR round 1 (seal)', 'ours', 4_000, 4),
    m('MRTR round 1 (seal)', 'bare', 3_000, 5),
    m('only bare', 'bare', 10, NaN),
    m('tools/list (200 tools)', 'ours', 9_000, 3),
    m('tools/list (200 tools)', 'sdk-v2-modern', 10, 900)
  ],
  peakRss: { 'ours@core': 90 },
  seal: { usPerSealOpen: 25, usPerSeal: 10, usPerOpen: 12 },
  soak: { seconds: 600, rps: 1600, samples: [], growthMb: 20, growthPct: 25, pass: false },
  skipped: [],
  notes: []
})

t.test('checks: the issue targets, from the same run', async (t) => {
  const byName = Object.fromEntries(checks(fixture()).map((c) => [c.name, c]))
  const echo = byName['tools/call echo: CPU per request vs bare Fastify']!
  t.match(echo, { op: '<=', limit: 1.15, pass: true })
  t.ok(Math.abs(echo.value - 50 / 45) < 1e-9, "ours' CPU per request over bare's")
  t.ok(Math.abs(echo.rps! - 0.9) < 1e-9, 'the req/s ratio of the same launches beside it')
  t.equal(byName['tools/call echo: p99 vs bare Fastify']!.byCpu, undefined, 'latency has no CPU form')
  t.match(byName['tools/call echo: p99 vs bare Fastify'], { op: '<=', limit: 1.5, pass: true })
  t.match(byName['tools/call echo: req/s vs SDK v1 (Express)'], { value: 45, pass: true })
  t.match(byName['tools/call echo: req/s vs SDK v2 (Fastify adapter)'], { value: 15, pass: false })
  t.match(byName['tools/list 304 (200 tools): CPU per request vs bare Fastify'], { value: 1.25, limit: 1.15, pass: false })
  t.match(byName['tools/list 304 (200 tools): p99 vs bare Fastify'], { value: 1, limit: 1.5, pass: true })
  t.notOk(byName['tools/list (200 tools): CPU per request vs bare Fastify'], 'no ratio without a bare number')
  t.match(byName['tools/list (200 tools): req/s vs SDK v2 createMcpHandler'], { value: 900, pass: true })
  t.match(byName['MRTR round 1 (seal): CPU per request vs bare Fastify'], { value: 3000 / 4000, limit: 1.15, pass: true })
  t.match(byName['seal + open one requestState'], { value: 25, pass: true })
  t.match(byName['soak 600 s: RSS growth'], { value: 25, pass: false })
  const bare = { ...fixture(), seal: undefined, soak: undefined } as Results
  t.notOk(checks(bare).some((c) => c.name.startsWith('seal') || c.name.startsWith('soak')))
  // With the heap probe's samples, the soak is judged by what survives a full GC, not by RSS.
  const probed = fixture()
  probed.soak!.heap = { samples: [], growthMb: 0.2, growthPct: 1, pass: true }
  const soakChecks = checks(probed).filter((c) => c.name.startsWith('soak'))
  t.equal(soakChecks.length, 1, 'one soak check')
  t.match(soakChecks[0], { name: 'soak 600 s: heap + external after GC, growth', value: 1, pass: true })
})

t.test('soak growth: the end against the plateau after warm-up', async (t) => {
  const flat = [60, 80, 81, 80, 82, 81, 80, 82, 81, 81].map((rssMb, i) => ({ t: i * 5, rssMb }))
  t.match(soakGrowth(flat), { pass: true })
  t.ok(Math.abs(soakGrowth(flat).growthMb) <= 1)
  const leak = flat.map((s, i) => ({ ...s, rssMb: 80 + i * 10 }))
  t.match(soakGrowth(leak), { growthMb: 60, pass: false }, '170 MB at the end against 110 MB')
  t.match(soakGrowth(flat.slice(0, 4)), { pass: false }, 'too short to tell')
  t.ok(Number.isNaN(soakGrowth([]).growthMb))
  t.match(growth([20, 21, 21, 21.2, 21, 21.1, 21, 21.3, 21.2, 21.1]), { pass: true }, 'any series: the heap after GC')
  t.match(growth([20, 21, 21, 24, 26, 28, 30, 32, 34, 36]), { growthMb: 12, pass: false }, '36 MB at the end against 24 MB')
})

t.test('table: one row per workload and server, with the ratios', async (t) => {
  const text = table(fixture())
  const lines = text.split('\n')
  t.equal(lines.length, 2 + fixture().measurements.length)
  t.match(text, '| tools/call echo | mcp-pure-http | 45000 | 0.30 | 1.20 | 11.1 |  | 90 | 90.0% |  |')
  t.match(text, '| tools/call echo | bare Fastify | 50000 | 0.25 | 1.00 | 10.0 |  | 90 |  | 0.90x |')
  t.match(text, '| tools/call echo | SDK v1 (Express) | 1000 | 10.00 | 40.00 | 500.0 |  | 90 | 2.0% | 45x |')
  t.match(text, '| only bare | bare Fastify | 10 | - | - | 50000.0 |  | 90 |  |  |', 'missing numbers are dashes')
  t.match(text, '| tools/list (200 tools) | SDK v2 createMcpHandler | 10 | 225.00 | 900.00 | 50000.0 |  | 90 |  | 900x |')
  const redis = fixture()
  redis.measurements[0] = { ...redis.measurements[0]!, redisUsPerRequest: 7.25 }
  t.match(table(redis), '| tools/call echo | mcp-pure-http | 45000 | 0.30 | 1.20 | 11.1 | 7.3 | 90 | 90.0% |  |', "the Redis server's CPU per request, in a Redis phase")
  t.same(workloads(fixture()), ['tools/call echo', 'tools/list 304 (200 tools)', 'MRTR round 1 (seal)', 'only bare', 'tools/list (200 tools)'])
})

t.test('verdicts: PASS or FAIL with the value and the target', async (t) => {
  const text = verdicts(fixture())
  t.match(text, 'PASS  tools/call echo: CPU per request vs bare Fastify: 1.11x (target <= 1.15x; req/s 0.90x)')
  t.match(text, 'PASS  tools/call echo: p99 vs bare Fastify: 1.20x (target <= 1.50x)\n')
  t.match(text, 'MISS  tools/call echo: req/s vs SDK v2 (Fastify adapter): 15x (target >= 20x; by CPU per request 15x)')
  t.match(text, 'PASS  seal + open one requestState: 25.0 µs (target <= 100 µs)')
  t.match(text, 'MISS  soak 600 s: RSS growth: 25.0 % (target <= 10 %)')
  const odd = fixture()
  odd.measurements[1] = m('tools/call echo', 'bare', 0, 1)
  t.match(verdicts(odd), 'MISS  tools/call echo: CPU per request vs bare Fastify: - (target', 'a bare run with no requests decides nothing')
})

t.test('svg: both panels, escaped text, targets dashed', async (t) => {
  const out = svg(fixture())
  t.match(out, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/)
  t.match(out, /<\/svg>$/)
  t.match(out, 'Throughput relative to bare Fastify')
  t.match(out, 'as a multiple of the SDK servers')
  t.match(out, 'Test CPU &lt;2 cores&gt;')
  t.match(out, '>90%<', 'ours against bare')
  t.match(out, '>2.0%<', 'small ratios keep a decimal')
  t.match(out, '>45x<')
  t.equal(out.match(/stroke-dasharray/g)?.length, 3 + 2, 'three ratio goals (echo, 304, MRTR round 1) and two SDK goals')
  t.match(out, 'by CPU per request: 0.90x')
  const noCpu = fixture()
  noCpu.measurements[0] = { ...noCpu.measurements[0]!, cpuUsPerRequest: NaN }
  // ours has none: its own bar and the SDK bars of that workload lose their ticks.
  t.equal(svg(noCpu).match(/by CPU per request:/g)!.length, out.match(/by CPU per request:/g)!.length - 3, 'no tick without a CPU number')
  const noSdk = fixture()
  noSdk.measurements = noSdk.measurements.filter((x) => !x.target.startsWith('sdk'))
  noSdk.meta = {}
  const plain = svg(noSdk)
  t.notMatch(plain, 'as a multiple of the SDK servers', 'no SDK panel without SDK numbers')
  t.notMatch(plain, 'SDK v1')
})

const REPORT = `finished in 10.00s, 23456.70 req/s, 5.12MB/s
requests: 234567 total, 234599 started, 234567 done, 234560 succeeded, 7 failed, 0 errored, 0 timeout
status codes: 234000 2xx, 500 3xx, 60 4xx, 0 5xx
traffic: 5.12MB (5368709) total, 1.23MB (1289748) headers (space savings 0.00%), 3.00MB (3145728) data`

t.test("parseSummary: h2load's report", async (t) => {
  t.same(parseSummary(REPORT), { rps: 23456.7, requests: 234567, failed: 7, statusCounts: [0, 0, 234000, 500, 60, 0], bytes: 5368709 })
  t.throws(() => parseSummary('connection refused'), /h2load output without/)
})

t.test('terms: --only and --skip split at commas outside parentheses', async (t) => {
  t.same(terms('list,MRTR'), ['list', 'mrtr'])
  t.same(terms(' Task: create (202, Redis store) , (1,000 queued),'), ['task: create (202, redis store)', '(1,000 queued)'], 'a workload id with commas is one term')
  t.same(terms('cluster,(202)'), ['cluster', '(202)'])
  t.same(terms('a (b, c)) , d'), ['a (b, c))', 'd'], 'an unmatched parenthesis closes nothing more')
  t.same(terms(''), [])
})

t.test("percentiles: from h2load's per-request log", async (t) => {
  const log = Array.from({ length: 100 }, (_, i) => `1795307991961926\t200\t${(i + 1) * 1000}`).join('\n') + '\n'
  t.same(percentiles(log), { p50Ms: 51, p99Ms: 100 })
  t.ok(Number.isNaN(percentiles('').p50Ms), 'no requests, no percentiles')
})

t.test('launches: each ratio the median of per-launch pairs, with its spread', async (t) => {
  t.equal(median([3, 1, 2]), 2)
  t.equal(median([4, 1, 2, 3]), 2.5)
  t.ok(Number.isNaN(median([])))
  const launches = (xs: number[]) => xs.map((rps) => ({ rps, p50Ms: 1, p99Ms: 2, cpuUsPerRequest: 1e6 / rps }))
  const ours = { ...m('tools/call echo', 'ours', 40_000, 1.2), launches: launches([40_000, 45_000, 30_000]) }
  const bare = { ...m('tools/call echo', 'bare', 50_000, 1.0), launches: launches([50_000, 50_000, 50_000]) }
  t.same(pairedRatios(ours, bare, (x) => x.rps), [0.8, 0.9, 0.6])
  t.same(pairedRatios(m('a', 'ours', 10, 1), bare, (x) => x.rps), [10 / 50_000], 'without launches: once, from the top-level numbers')
  const r: Results = { ...fixture(), measurements: [ours, bare], seal: undefined, soak: undefined }
  const echo = checks(r).find((c) => c.name === 'tools/call echo: CPU per request vs bare Fastify')!
  t.match(echo, { value: 1.25, pass: false, spread: { max: 50 / 30, launches: 3 } }, 'the median misses 1.15 though one launch met it')
  t.ok(Math.abs(echo.spread!.min - 50 / 45) < 1e-9)
  t.match(verdicts(r), 'MISS  tools/call echo: CPU per request vs bare Fastify: 1.25x, median of 3 launches, 1.11x-1.67x (target <= 1.15x; req/s 0.80x)')
  t.match(table(r), '| tools/call echo | mcp-pure-http | 40000 | 0.30 | 1.20 | 12.5 |  | 90 | 80.0% (60.0-90.0) |  |')
  // The chart draws what the verdict counts: 0.75, the median of 40/60, 45/50 and 30/40, not the
  // ratio of the medians (40,000 / 50,000 = 0.80).
  const uneven: Results = { ...r, measurements: [ours, { ...bare, launches: launches([60_000, 50_000, 40_000]) }] }
  t.match(verdicts(uneven), 'CPU per request vs bare Fastify: 1.33x, median of 3 launches, 1.11x-1.50x (target <= 1.15x; req/s 0.75x)')
  t.match(svg(uneven), '>75%<')
  t.notMatch(svg(uneven), '>80%<')
})

t.test('redis proxy: commands counted from RESP across chunk boundaries; per request', async (t) => {
  const names: string[] = []
  const parser = new RespCommands((name) => names.push(name))
  const wire = Buffer.from('*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$7\r\nEVALSHA\r\n$4\r\nabcd\r\n$1\r\n0\r\n*3\r\n$4\r\nEVAL\r\n$6\r\nreturn\r\n$1\r\n0\r\nPING\r\n')
  for (let i = 0; i < wire.length; i += 5) parser.push(wire.subarray(i, i + 5))
  const sha1 = (s: string) => createHash('sha1').update(s).digest('hex')
  t.same(names, ['GET', 'EVALSHA abcd', `EVAL ${sha1('return')}`, 'PING'], 'EVAL named by its source SHA-1, as EVALSHA would be')
  const per = perRequest({ writes: 1, commands: 2, byName: { GET: 2 } }, { writes: 5, commands: 8, byName: { GET: 4, 'EVALSHA x': 4 } }, 2)
  t.same(per, { writes: 2, commands: 3, byName: { GET: 1, 'EVALSHA x': 2 } })
  const text = roundTripTable([{ workload: 'w', target: 'ours', requests: 2, perRequest: per }], { x: 'myScript' })
  t.match(text, '| w | ours | 2 | 3 | myScript 2, GET 1 |')
  t.match(roundTripTable([{ workload: 'w', target: 'ours', requests: 2, perRequest: { writes: 1, commands: 1, byName: { 'EVAL y': 1, 'EVALSHA zzzzzzzzzz': 0.5 } } }], { y: 'other' }), 'other (EVAL) 1, zzzzzzzz 0.50')
  // A store's scripts carry its configuration (a SHA-1 per store) and begin with "-- <name>": the
  // name is learned when one is sent whole, and its EVALSHAs are named by it from then on.
  const lua = '-- mcpThing\nreturn 1'
  const eval1 = `*3\r\n$4\r\nEVAL\r\n$${lua.length}\r\n${lua}\r\n$1\r\n0\r\n`
  parser.push(Buffer.from(eval1))
  t.equal(LEARNED_SCRIPTS[sha1(lua)], 'mcpThing')
  t.equal(scriptNames()[sha1(lua)], 'mcpThing')
  t.match(roundTripTable([{ workload: 'w', target: 'ours', requests: 1, perRequest: { writes: 1, commands: 1, byName: { [`EVALSHA ${sha1(lua)}`]: 1 } } }]), '| w | ours | 1 | 1 | mcpThing 1 |')
})

t.test('each round visits the targets from the next one, every other cycle backwards', async (t) => {
  // Two targets: each goes first in turn (reversing a rotated round used to cancel out: ours first every time).
  t.same([0, 1, 2, 3].map((r) => visitOrder(['ours', 'bare'], r)), [['ours', 'bare'], ['bare', 'ours'], ['ours', 'bare'], ['bare', 'ours']])
  const three = [0, 1, 2, 3, 4, 5].map((r) => visitOrder(['a', 'b', 'c'], r).join(''))
  t.same(three, ['abc', 'bca', 'cab', 'acb', 'bac', 'cba'])
  // Over two cycles each target is first equally often and runs right after each other one.
  const firsts = new Map<string, number>()
  const after = new Set<string>()
  for (const order of three) {
    firsts.set(order[0]!, (firsts.get(order[0]!) ?? 0) + 1)
    for (let i = 1; i < order.length; i++) after.add(order[i - 1]! + order[i]!)
  }
  t.same([...firsts.values()], [2, 2, 2])
  t.equal(after.size, 6)
})
