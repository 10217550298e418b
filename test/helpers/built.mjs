// Test files are TypeScript, loaded by tsx; what they import from the library (src/, routes/, bin/,
// bench/) is loaded from dist/, where `npm run build` (tap's `before` step) compiled it with tsc. Two
// reasons: each test process skips transpiling ~150 library files (the suite's largest fixed cost),
// and coverage is measured on the same compiled code, with tsc's source maps, as in the servers and
// CLIs the tests start from dist/ (tsx's own output is whitespace-minified, which line coverage
// cannot map back). Registered after tsx, this hook runs first and sees tsx's resolution.
import { ChildProcess } from 'node:child_process'
import * as nodeModule from 'node:module'
import { basename } from 'node:path'
import { fileURLToPath } from 'node:url'
import { onExit } from 'signal-exit'
import { loadSync, resolveSync } from './built-hooks.mjs'

// Where Node has in-thread hooks (module.registerHooks: Node 22 and later), tsx registers its own
// there, and they come before any hook of module.register: ours must be in-thread too, and,
// registered after tsx's, they run first. Elsewhere (Node 20) both are module.register hooks.
if (typeof nodeModule.registerHooks === 'function') nodeModule.registerHooks({ resolve: resolveSync, load: loadSync })
else nodeModule.register('./built-hooks.mjs', import.meta.url)

// The processes a test starts (servers, CLIs, and what they start in turn) report their coverage
// through V8's own NODE_V8_COVERAGE, into the folder tap's report reads, instead of through tap's
// processinfo: its module hooks run on a second thread and cost each child ~1.2 s of CPU at start
// (a demo server: 3.7 s instead of 2.4 s), which was a quarter of the suite's CPU. V8 writes the
// same coverage, source maps included, when a child exits (a clean exit or a handled signal: our
// servers and CLIs handle SIGTERM and SIGINT).
// tap adds processinfo to every spawn through process-on-spawn's shared listener list; this listener
// runs after it and takes it out again.
const spawnHooks = globalThis[Symbol.for('process-on-spawn@*:singletonId')]

/**
 * npm or npx, or node running a script from node_modules (someone else's program), or a bench server
 * from dist/bench/ (not the library: .taprc leaves bench/ out of coverage), node started directly or
 * through a wrapper (the bench's `nice`, `taskset`, `valgrind`).
 */
const uncovered = (args) => {
  if (/^(npm|npx)$/.test(basename(args[0] ?? ''))) return true
  const node = args.indexOf(process.execPath)
  return node >= 0 && /[\\/](node_modules|dist[\\/]bench)[\\/]/.test(args.find((a, i) => i > node && !a.startsWith('-')) ?? '')
}

if (spawnHooks !== undefined && process.env._TAPJS_PROCESSINFO_COVERAGE_ === '1') {
  const coverage = fileURLToPath(new URL('../../.tap/coverage', import.meta.url))
  spawnHooks.listeners.push((child) => {
    const options = (child.env.NODE_OPTIONS ?? '').split(/\s+/).filter((o) => o !== '' && !o.includes('@tapjs/processinfo'))
    const env = Object.fromEntries(Object.entries(child.env).filter(([k]) => !k.startsWith('_TAPJS_PROCESSINFO_') && k !== 'NODE_V8_COVERAGE'))
    child.env = { ...env, NODE_OPTIONS: options.join(' ') }
    // Not for someone else's program (npm, a third-party MCP server from node_modules): V8's
    // coverage slows it and writes megabytes that the report throws away. Nor for a bench server.
    if (!uncovered(child.args)) child.env.NODE_V8_COVERAGE = coverage
  })
}

// A test file that ends early (tap's timeout, an uncaught error, a signal) skips the teardowns that
// stop what it started: its servers, redis-server and nginx would outlive it, holding their ports.
// Every child still running when this process exits, and not already told to stop, gets SIGTERM
// (our servers, redis-server and nginx stop on it; a test that meant to stop a child did already).
const running = new Set()
const spawn = ChildProcess.prototype.spawn
ChildProcess.prototype.spawn = function (...args) {
  const result = spawn.apply(this, args)
  if (this.pid !== undefined) {
    running.add(this)
    this.once('exit', () => running.delete(this))
  }
  return result
}
onExit((_code, signal) => {
  // At tap's timeout, say what was still open: a file whose tests all passed but whose process
  // would not end (a client left connecting, a timer) is otherwise a bare "SIGALRM".
  if (signal === 'SIGALRM') process.stderr.write(`still open when the file timed out: ${openHandles()}\n`)
  for (const child of running) if (!child.killed && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
})

/** The kinds of what keeps this process alive (Timeout, TCPSocketWrap, ...), as Node lists them. */
function openHandles() {
  return process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap').join(', ')
}
