// `npm test` runs real programs besides Node: redis-server and nginx for the store and cluster tests,
// tmux for the CLI's terminal, curl and jq for the docs' examples, Debian's chromium for the pages,
// valgrind and h2load for the bench's instruction counts.
// This script (the `pretest` step) finds each one and, where one is missing, installs it with apt-get
// when it can do so without asking (root, or sudo without a password); otherwise it stops at once
// with the exact command to run, so a suite never meets a missing program minutes into its run.
// The tests keep their own check (test/helpers/prerequisites.ts) for a single file run with `npx tap`.
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Each program the tests run, and the Debian package that installs it. */
export const PREREQUISITES = {
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  nginx: 'nginx',
  tmux: 'tmux',
  curl: 'curl',
  jq: 'jq',
  chromium: 'chromium',
  callgrind_control: 'valgrind',
  h2load: 'nghttp2-client'
}

// nginx and redis-server live in /usr/sbin, which a user's PATH often lacks.
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin']

/** The path of `name` on `path` or in the sbin folders, or undefined. */
export function find(name, path = process.env.PATH ?? '') {
  for (const dir of [...path.split(delimiter).filter(Boolean), ...SBIN]) {
    const file = join(dir, name)
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {}
  }
  return undefined
}

/** The Debian packages of the programs that `find` does not find, in the table's order, each once. */
export function missingPackages(programs = PREREQUISITES, path = process.env.PATH) {
  return [...new Set(Object.entries(programs).filter(([name]) => find(name, path) === undefined).map(([, pkg]) => pkg))]
}

/** The command a person runs to install `packages`: with sudo where this machine has it. */
export function installCommand(packages) {
  const apt = `apt-get update && apt-get install -y ${packages.join(' ')}`
  return find('sudo') === undefined ? `${apt}   (as root)` : `sudo ${apt.replace('&& apt-get', '&& sudo apt-get')}`
}

/**
 * How this process can install Debian packages without a prompt: the command prefix (none as root,
 * `sudo -n` with passwordless sudo), or the reason it cannot.
 */
function installer() {
  if (find('apt-get') === undefined) return { cannot: 'apt-get is not here (this is not Debian or Ubuntu)' }
  /* c8 ignore start: which answer depends on the user running the suite (root, passwordless sudo or
     neither), and the test that asks as `nobody` gives no coverage back (it cannot write this user's
     .tap/coverage; sudo drops NODE_V8_COVERAGE). test/deploy/prerequisites.test.ts asserts what it answers. */
  if (process.getuid?.() === 0) return { prefix: [] }
  if (find('sudo') === undefined) return { cannot: 'installing needs root, and sudo is not installed' }
  if (spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0) return { prefix: ['sudo', '-n'] }
  return { cannot: 'installing needs root, and sudo asks for a password' }
}

function run(prefix, args) {
  const [cmd, ...rest] = [...prefix, ...args]
  const r = spawnSync(cmd, rest, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  return r.status === 0
}
/* c8 ignore stop */

/** Installs what is missing, or says what to run. Returns the exit code. */
export function ensure(programs = PREREQUISITES) {
  const missing = missingPackages(programs)
  if (missing.length === 0) return 0
  const how = installer()
  if (how.cannot !== undefined) {
    console.error(`npm test needs programs this machine lacks (Debian packages: ${missing.join(', ')}).\n` +
      `It cannot install them itself: ${how.cannot}.\nInstall them with:\n\n  ${installCommand(missing)}\n`)
    return 1
  }
  /* c8 ignore start: installing with apt-get, as root or through sudo; the suite cannot install
     system packages to test it (checked by hand on a fresh machine, 2026-11-28). */
  console.error(`npm test: installing the Debian packages it needs: ${missing.join(' ')}`)
  if (!run(how.prefix, ['apt-get', 'update', '-qq']) || !run(how.prefix, ['apt-get', 'install', '-y', '-qq', ...missing])) {
    console.error(`npm test: apt-get failed (above). Install the packages with:\n\n  ${installCommand(missing)}\n`)
    return 1
  }
  const still = missingPackages(programs)
  if (still.length > 0) {
    console.error(`npm test: still missing after apt-get: ${still.join(', ')}. Install them with:\n\n  ${installCommand(still)}\n`)
    return 1
  }
  return 0
  /* c8 ignore stop */
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // MCP_TEST_PREREQUISITES=name:package,... replaces the table (the test of this script uses it).
  const only = process.env.MCP_TEST_PREREQUISITES
  process.exitCode = ensure(only === undefined ? PREREQUISITES : Object.fromEntries(only.split(',').map((pair) => pair.split(':'))))
}
