/**
 * `npm run conformance`: start the fixture server (./server.ts) and run the official MCP conformance
 * suite against its /mcp endpoint: every server scenario at 2025-11-25, every one at 2026-07-28, and
 * the extension scenarios (tasks, skills) at their own wire. Results go to results/conformance/.
 *
 * A scenario that fails must be listed, with its reason, in expected-failures.json; one that passes
 * must not be (the suite's own baseline rules: stale entries fail too). The exit code says whether
 * both hold. The suite needs Node 22 or later: this runs it with the current Node when that is new
 * enough, else with the `node@22` package from the npm registry (through npx).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../helpers/redis-server.js'

type Expected = Record<string, Record<string, string>>
interface Run {
  name: string
  args: string[]
}

const root = fileURLToPath(new URL('../../../', import.meta.url))
const out = join(root, 'results', 'conformance')
const expected = JSON.parse(await readFile(join(root, 'test', 'conformance', 'expected-failures.json'), 'utf8')) as Expected
const pkg = createRequire(join(root, 'test', 'tools', 'package.json')).resolve('@modelcontextprotocol/conformance/package.json')
const cli = join(dirname(pkg), 'dist', 'index.js')
const modernNode = Number(process.versions.node.split('.')[0]) >= 22

/** Run the suite's CLI; resolves with its exit code and what it printed. */
function conformance(args: string[]): Promise<{ code: number; output: string }> {
  const [cmd, pre] = modernNode ? [process.execPath, []] : ['npx', ['--yes', '-p', 'node@22', 'node']]
  const child = spawn(cmd, [...pre, cli, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d: Buffer) => (output += d))
  child.stderr.on('data', (d: Buffer) => (output += d))
  return once(child, 'exit').then(([code]) => ({ code: code as number, output }))
}

async function startFixture(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(root, 'dist', 'test', 'conformance', 'server.js')], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => String(d).includes('conformance fixture at') && resolve())
    child.once('exit', (code) => reject(new Error(`the fixture server exited with ${code}`)))
  })
  return child
}

/** The checks that did not pass (FAILURE, or WARNING as the suite's baseline counts it), by scenario. */
async function failures(dir: string): Promise<Map<string, string[]>> {
  const failed = new Map<string, string[]>()
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue
    const scenario = entry.name.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '')
    const checks = JSON.parse(await readFile(join(dir, entry.name, 'checks.json'), 'utf8')) as { id: string; status: string }[]
    const bad = [...new Set(checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => c.id))]
    if (bad.length > 0) failed.set(scenario, bad)
  }
  return failed
}

const port = await freePort()
const url = `http://localhost:${port}/mcp`
await rm(out, { recursive: true, force: true })
await mkdir(out, { recursive: true })
const server = await startFixture(port)
let ok = true
const summary: Record<string, { failed: Record<string, string[]>; expected: Record<string, string> }> = {}
try {
  const listed = await conformance(['list', '--server'])
  const extensions = [...listed.output.matchAll(/^\s+- (\S+) \[extension\]$/gm)].map((m) => m[1]!)
  const runs: Run[] = [
    { name: '2025-11-25', args: ['--suite', 'all', '--spec-version', '2025-11-25'] },
    { name: '2026-07-28', args: ['--suite', 'all', '--spec-version', '2026-07-28'] },
    ...extensions.map((s) => ({ name: `extensions/${s}`, args: ['--scenario', s] }))
  ]
  for (const run of runs) {
    const group = run.name.startsWith('extensions/') ? 'extensions' : run.name
    const dir = join(out, run.name)
    await mkdir(dir, { recursive: true })
    const baseline = join(dir, 'baseline.json')
    // The suite reads YAML, and JSON is YAML.
    await writeFile(baseline, JSON.stringify({ server: Object.keys(expected[group] ?? {}).filter((s) => group !== 'extensions' || s === run.name.slice(11)) }))
    const { code, output } = await conformance(['server', '--url', url, ...run.args, '-o', dir, '--expected-failures', baseline])
    await writeFile(join(dir, 'output.txt'), output)
    const failed = await failures(dir)
    const entry = (summary[group] ??= { failed: {}, expected: expected[group] ?? {} })
    for (const [s, checks] of failed) entry.failed[s] = checks
    console.log(`${code === 0 ? 'ok' : 'NOT OK'} ${run.name}: ${failed.size} failing scenario(s)${code === 0 ? '' : ` (see ${join('results', 'conformance', run.name, 'output.txt')})`}`)
    if (code !== 0) {
      ok = false
      console.log(output.slice(output.lastIndexOf('=== SUMMARY ===')))
    }
  }
} finally {
  server.kill('SIGTERM')
  await once(server, 'exit')
}
await writeFile(join(out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n')
for (const [group, { failed, expected: why }] of Object.entries(summary)) {
  for (const [s, checks] of Object.entries(failed)) {
    for (const c of checks) console.log(`  ${group} ${s} ${c}: ${why[`${s}:${c}`] ?? why[s] ?? 'NOT LISTED'}`)
  }
}
console.log(ok ? 'conformance: every failure is expected' : 'conformance: unexpected results (above)')
process.exitCode = ok ? 0 : 1
