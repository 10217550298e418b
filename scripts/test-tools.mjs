// The programs only some tests run (puppeteer-core for the pages, redocly and @hey-api/openapi-ts for
// the OpenAPI document, the conformance suite, the third-party MCP servers behind the gateway) are
// not devDependencies: they were a sixth of every contributor's `npm install` by count
// and a quarter by size (docs/development.md, "A lighter install"). They live in test/tools/package.json,
// with their own lock, and this script installs them into test/tools/node_modules with `npm ci` the first
// time a test run needs them and again whenever test/tools/package-lock.json changes. `npm test`,
// `npm run typecheck`, `npm run conformance`, `npm run bench` and tap's `before` step (a file run
// alone) call it; with the tools in place it reads one file and compares a digest.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The tools' package. Tests reach its packages through the modules beside it (test/tools/*.ts), whose
 * imports resolve there, or by path; a test/node_modules would shadow the project's own copies of
 * packages the tools share with it (typescript, the SDK) for every test file.
 */
export const TOOLS = fileURLToPath(new URL('../test/tools', import.meta.url))

/** Written into node_modules after a successful install: the digest of the lock it installed. */
const STAMP = '.installed-lock'

function digest(dir) {
  return createHash('sha256').update(readFileSync(join(dir, 'package-lock.json'))).digest('hex')
}

/** Whether `dir`'s node_modules holds what its lock says (installed by `ensureTools` from this lock). */
export function installed(dir = TOOLS) {
  try {
    return readFileSync(join(dir, 'node_modules', STAMP), 'utf8') === digest(dir)
  } catch {
    return false
  }
}

/** Installs the tools when missing or stale. Returns the exit code; says what to run when it fails. */
export function ensureTools(dir = TOOLS, npm = 'npm') {
  if (installed(dir)) return 0
  const lock = digest(dir)
  console.error(`Installing the test tools (${join(dir, 'package.json')}) into ${join(dir, 'node_modules')}`)
  const r = spawnSync(npm, ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] })
  if (r.status !== 0) {
    console.error(`Installing the test tools failed (above). Install them with:\n\n  cd ${dir} && npm ci\n`)
    return 1
  }
  mkdirSync(join(dir, 'node_modules'), { recursive: true }) // npm makes none for a package without dependencies
  writeFileSync(join(dir, 'node_modules', STAMP), lock)
  return 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = ensureTools()
