import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

// scripts/build-if-stale.mjs (before `npm start`, `npm run dev` and the suite) in a project of its
// own: a few sources, and a `tsc` that records each run and, like the real one, leaves the stamp
// alone when it exists (no output changed); told to, it fails, or dies of a signal.
const script = fileURLToPath(new URL('../../scripts/build-if-stale.mjs', import.meta.url))
const TSC = `
const { appendFileSync, existsSync, mkdirSync, writeFileSync } = require('node:fs')
appendFileSync('tsc-runs', process.argv.slice(2).join(' ') + '\\n')
if (existsSync('tsc-fails')) process.exit(3)
if (existsSync('tsc-killed')) process.kill(process.pid, 'SIGKILL')
mkdirSync('dist', { recursive: true })
if (!existsSync('dist/tsconfig.tsbuildinfo')) writeFileSync('dist/tsconfig.tsbuildinfo', '{}')
`

t.test('tsc runs when dist/ is missing or a source is newer, never when nothing changed; its failure is the exit code', async (t) => {
  // Only src/ and the configuration files: a source folder that is not there counts as old.
  const dir = t.testdir({ src: { 'a.ts': 'export {}\n' }, 'tsconfig.json': '{}', 'package.json': '{}', node_modules: { typescript: { bin: { tsc: TSC } } } })
  const build = () => spawnSync(process.execPath, [script], { cwd: dir, encoding: 'utf8' })
  const runs = () => readFileSync(join(dir, 'tsc-runs'), 'utf8').trim().split('\n').length
  const ago = (s: number) => new Date(Date.now() - s * 1000)
  for (const f of ['src/a.ts', 'src', 'tsconfig.json', 'package.json']) utimesSync(join(dir, f), ago(120), ago(120))

  t.equal(build().status, 0)
  t.equal(readFileSync(join(dir, 'tsc-runs'), 'utf8'), '-p tsconfig.json --incremental\n', 'never built: tsc runs')
  t.equal(build().status, 0)
  t.equal(runs(), 1, 'built, nothing newer: tsc does not run')

  utimesSync(join(dir, 'dist/tsconfig.tsbuildinfo'), ago(60), ago(60))
  utimesSync(join(dir, 'src/a.ts'), ago(30), ago(30))
  t.equal(build().status, 0)
  t.equal(runs(), 2, 'a source newer than the stamp: tsc runs')
  t.equal(build().status, 0)
  t.equal(runs(), 2, 'tsc left the stamp alone, the script touched it: no second run')

  mkdirSync(join(dir, 'src/new'))
  writeFileSync(join(dir, 'tsc-fails'), '')
  t.equal(build().status, 3, "a folder added is a change; tsc's failure is the script's exit code")
  t.equal(runs(), 3)
  rmSync(join(dir, 'tsc-fails'))
  writeFileSync(join(dir, 'tsc-killed'), '')
  t.equal(build().status, 1, 'tsc killed by a signal: exit code 1')
  t.equal(runs(), 4)
})
