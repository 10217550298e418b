import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'

// What test/helpers/built.mjs does to the processes a test file starts.
const built = fileURLToPath(new URL('../helpers/built.mjs', import.meta.url))
const coverage = fileURLToPath(new URL('../../.tap/coverage', import.meta.url))
const run = promisify(execFile)
const ENV_PROBE = 'console.log(JSON.stringify({ coverage: process.env.NODE_V8_COVERAGE ?? null, options: process.env.NODE_OPTIONS ?? "" }))'

t.test("a child reports coverage through V8 into tap's folder, without tap's module hooks", async (t) => {
  const { stdout } = await run(process.execPath, ['-e', ENV_PROBE])
  const env = JSON.parse(stdout) as { coverage: string | null; options: string }
  t.notMatch(env.options, /processinfo/, 'no processinfo hooks in the child')
  if (process.env._TAPJS_PROCESSINFO_COVERAGE_ === '1') t.equal(env.coverage, coverage, 'coverage on: V8 writes it where the report reads')
  else t.equal(env.coverage, null, 'coverage off: none in the child either')
})

t.test('a program from node_modules runs without coverage', async (t) => {
  const dir = join(t.testdir(), 'node_modules', 'probe')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'index.js'), ENV_PROBE)
  const { stdout } = await run(process.execPath, [join(dir, 'index.js')])
  t.same(JSON.parse(stdout), { coverage: null, options: '' })
})

/** Is a process with this pid still there? */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

// A test process that ends early (process.exit, or tap's SIGALRM at a timeout) before its
// teardowns: the child it started is stopped with it.
for (const end of ['exit', 'SIGALRM'] as const) {
  t.test(`a child outlives no test process that ends with ${end}`, async (t) => {
    const file = join(t.testdir(), 'early.mjs')
    writeFileSync(
      file,
      `import { spawn } from 'node:child_process'
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
      console.log(child.pid)
      setInterval(() => {}, 1000)
      if (process.argv[2] === 'exit') setTimeout(() => process.exit(3), 200)`
    )
    const parent = spawn(process.execPath, [`--import=${built}`, file, end], { stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    parent.stderr.on('data', (d: Buffer) => (err += String(d)))
    const [line] = (await once(parent.stdout, 'data')) as [Buffer]
    const pid = Number(String(line).trim())
    t.ok(alive(pid), 'the child runs')
    if (end === 'SIGALRM') parent.kill('SIGALRM')
    const [code, signal] = (await once(parent, 'exit')) as [number | null, string | null]
    t.same([code, signal], end === 'exit' ? [3, null] : [null, 'SIGALRM'])
    if (end === 'SIGALRM') t.match(err, /still open when the file timed out: .*Timeout/, 'what kept it alive, at the timeout')
    else t.equal(err, '', 'nothing to say on an exit')
    // Stopped by SIGTERM: gone once init has reaped it (a generous bound, not a timing claim).
    for (let i = 0; i < 600 && alive(pid); i++) await sleep(50)
    const left = alive(pid)
    if (left) process.kill(pid, 'SIGKILL')
    t.notOk(left, 'the child stopped with it')
  })
}
