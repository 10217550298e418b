import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { TOOLS, ensureTools, installed } from '../../scripts/test-tools.mjs'

const script = fileURLToPath(new URL('../../scripts/test-tools.mjs', import.meta.url))
const LOCK = { name: 'tools', lockfileVersion: 3, requires: true, packages: { '': { name: 'tools' } } }

/** A tools package without dependencies, and an `npm` that logs its arguments and exits with `code`. */
function fixture(t: Test, code = 0): { dir: string; npm: string; calls: () => string[] } {
  const dir = t.testdir({ 'package.json': JSON.stringify({ name: 'tools', private: true }), 'package-lock.json': JSON.stringify(LOCK) })
  const log = join(dir, 'npm.log')
  const npm = join(dir, 'fake-npm')
  writeFileSync(npm, `#!/bin/sh\necho "$PWD $*" >> ${log}\nexit ${code}\n`)
  chmodSync(npm, 0o755)
  return { dir, npm, calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []) }
}

t.test('installs with npm ci in the tools folder once, and again only when the lock changes', async (t) => {
  const { dir, npm, calls } = fixture(t)
  t.equal(installed(dir), false, 'nothing installed yet')
  t.equal(ensureTools(dir, npm), 0)
  t.same(calls(), [`${dir} ci --no-audit --no-fund --loglevel=error`], 'npm ci, run in the tools folder')
  t.equal(installed(dir), true)
  t.equal(ensureTools(dir, npm), 0)
  t.equal(calls().length, 1, 'installed: npm is not run again')
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ ...LOCK, name: 'tools-2' }))
  t.equal(installed(dir), false, 'a changed lock makes the install stale')
  t.equal(ensureTools(dir, npm), 0)
  t.equal(calls().length, 2, 'installed again')
})

t.test('a failed install returns 1, names the command, and leaves nothing that looks installed', async (t) => {
  const { dir, npm } = fixture(t, 1)
  const r = spawnSync(process.execPath, ['-e', `import(${JSON.stringify(script)}).then((m) => process.exit(m.ensureTools(${JSON.stringify(dir)}, ${JSON.stringify(npm)})))`], { encoding: 'utf8' })
  t.equal(r.status, 1)
  t.match(r.stderr, `Installing the test tools failed (above). Install them with:\n\n  cd ${dir} && npm ci\n`)
  t.equal(installed(dir), false)
})

t.test('with the real npm: a package without dependencies installs and is stamped', async (t) => {
  const { dir } = fixture(t)
  t.equal(ensureTools(dir), 0)
  t.equal(installed(dir), true)
})

t.test("the project's tools are installed (npm test's pretest did it), and the script says so at once", async (t) => {
  t.equal(installed(TOOLS), true)
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8' })
  t.equal(r.status, 0)
  t.equal(r.stderr, '', 'nothing to install, nothing said')
})
