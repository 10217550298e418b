import { spawnSync } from 'node:child_process'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { find, installCommand, missingPackages } from '../../scripts/prerequisites.mjs'
import { prerequisite } from '../helpers/prerequisites.js'

const script = fileURLToPath(new URL('../../scripts/prerequisites.mjs', import.meta.url))

t.test('a missing program fails with one line that names the package to install', async (t) => {
  const path = process.env.PATH
  t.teardown(() => void (process.env.PATH = path))
  t.match(prerequisite('tmux'), /\/tmux$/, 'found on this machine')
  // Nothing on PATH: tmux lives in /usr/bin, so it is missing now (the sbin fallback is for nginx and redis-server).
  process.env.PATH = '/nonexistent'
  t.throws(() => prerequisite('tmux'), { message: `tmux is not installed: these tests need a real tmux. \`npm test\` installs it, or run: ${installCommand(['tmux'])}` })
})

t.test('programs are found on PATH or in sbin; each missing package is named once', async (t) => {
  const dir = t.testdir()
  writeFileSync(join(dir, 'tool-a'), '#!/bin/sh\n')
  chmodSync(join(dir, 'tool-a'), 0o755)
  writeFileSync(join(dir, 'not-executable'), '')
  t.equal(find('tool-a', dir), join(dir, 'tool-a'))
  t.equal(find('not-executable', dir), undefined, 'a file that cannot run is not the program')
  t.match(find('nginx', dir), /^\/(usr\/)?(local\/)?sbin\/nginx$/, 'nginx from /usr/sbin, off this PATH')
  t.same(missingPackages({ 'tool-a': 'pkg-a', 'tool-b': 'pkg-b', 'tool-c': 'pkg-b', 'tool-d': 'pkg-d' }, dir), ['pkg-b', 'pkg-d'])
  t.same(missingPackages(undefined, process.env.PATH), [], 'everything npm test needs is on this machine (npm test installed it)')
})

t.test('the command to install says sudo where sudo is on PATH', async (t) => {
  const path = process.env.PATH
  t.teardown(() => void (process.env.PATH = path))
  process.env.PATH = t.testdir()
  t.equal(installCommand(['p', 'q']), 'apt-get update && apt-get install -y p q   (as root)')
  writeFileSync(join(process.env.PATH, 'sudo'), '#!/bin/sh\n')
  chmodSync(join(process.env.PATH, 'sudo'), 0o755)
  t.equal(installCommand(['p', 'q']), 'sudo apt-get update && sudo apt-get install -y p q')
})

t.test('npm test as a user who cannot install stops at once with the command to run', async (t) => {
  // The pretest step run as `nobody` (root drops to it; a user with passwordless sudo too), for a
  // program no machine has: it must exit 1 naming apt-get and the package, not try to install.
  const asRoot = process.getuid?.() === 0
  const sudo = !asRoot && find('sudo') !== undefined && spawnSync('sudo', ['-n', 'true']).status === 0
  const drop = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
  const argv = asRoot ? drop : sudo ? ['sudo', '-n', ...drop] : []
  const [cmd, ...args] = [...argv, process.execPath, script]
  const r = spawnSync(cmd!, args, {
    env: { PATH: process.env.PATH, MCP_TEST_PREREQUISITES: 'mcp-test-absent:mcp-test-absent-pkg' },
    encoding: 'utf8',
    timeout: 60_000
  })
  t.equal(r.status, 1, r.stderr)
  t.match(r.stderr, 'npm test needs programs this machine lacks (Debian packages: mcp-test-absent-pkg)')
  t.match(r.stderr, /It cannot install them itself: installing needs root, and sudo (is not installed|asks for a password)\./)
  t.match(r.stderr, /apt-get update && (sudo )?apt-get install -y mcp-test-absent-pkg/)
  t.notMatch(r.stderr, 'installing the Debian packages', 'it did not try')
})

t.test('without apt-get (not Debian) it stops at once with the command to run, for the programs the table names', async (t) => {
  // No PATH, so no apt-get and no tmux; the table MCP_TEST_PREREQUISITES gives replaces the whole
  // one (else tmux would be missing too), and nginx is found in /usr/sbin all the same.
  const run = (programs: string) => spawnSync(process.execPath, [script], { env: { MCP_TEST_PREREQUISITES: programs }, encoding: 'utf8', timeout: 60_000 })
  const absent = run('nginx:nginx,mcp-test-absent:mcp-test-absent-pkg')
  t.equal(absent.status, 1, absent.stderr)
  t.match(absent.stderr, 'npm test needs programs this machine lacks (Debian packages: mcp-test-absent-pkg).\nIt cannot install them itself: apt-get is not here (this is not Debian or Ubuntu).')
  t.notMatch(absent.stderr, 'installing the Debian packages', 'it did not try')
  const found = run('nginx:nginx')
  t.same([found.status, found.stderr], [0, ''], 'only the programs named are looked for')
})

t.test('with everything installed, the pretest step passes silently', async (t) => {
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 })
  t.equal(r.status, 0)
  t.equal(r.stderr, '')
})
