import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { appendFile, mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { compare, consoleBlocks, fill, matchJson, matchText, type Bindings } from '../helpers/docs-examples-lib.js'
import { prerequisite } from '../helpers/prerequisites.js'
import { reservePort } from '../helpers/redis-server.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const main = join(root, 'dist', 'src', 'main.js')
// The documented servers: the demo on :3000, and a second instance on :3001 where a page shows one.
const DOC_PORTS = [3000, 3001] as const
const STATE_KEYS = `k1:${Buffer.alloc(32, 9).toString('base64url')}`

// Each page starts its own demo servers and runs its examples one by one: more than tap's default.
t.setTimeout(900_000)
prerequisite('curl')
prerequisite('jq')

/** `npm start` as documented, on a free loopback port; resolved once it answers. */
async function startDemo(t: Test): Promise<number> {
  const { port, release } = await reservePort()
  await release()
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'silent', MCP_STATE_KEYS: STATE_KEYS },
    stdio: 'ignore'
  })
  t.teardown(async () => {
    // SIGTERM and wait: a clean exit also writes the child's coverage.
    if (child.exitCode === null) await (child.kill('SIGTERM'), once(child, 'exit'))
  })
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the demo server exited with ${child.exitCode}`)
    const up = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
    if (up) return port
    if (i === 1200) throw new Error('the demo server did not start in 60 s')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** One bash for a whole file, so a variable set by one example is there for the next. */
function shell(t: Test, cwd: string): (command: string) => Promise<string> {
  const bash: ChildProcessWithoutNullStreams = spawn('bash', ['--noprofile', '--norc'], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, LC_ALL: 'C.UTF-8' } })
  t.teardown(() => void bash.kill('SIGKILL'))
  let out = ''
  let waiting: ((text: string) => void) | undefined
  let n = 0
  const sentinel = () => `\u0000done ${n}\u0000`
  bash.stdout.on('data', (d: Buffer) => {
    out += d.toString('utf8')
    const end = out.indexOf(sentinel())
    if (end !== -1 && waiting !== undefined) {
      const text = out.slice(0, end)
      out = out.slice(end + sentinel().length)
      waiting(text)
    }
  })
  bash.stdin.write('exec 2>&1\n')
  return (command) =>
    new Promise((resolve, reject) => {
      n++
      // A command that never ends (a server started in the foreground, say) fails its example.
      const timer = setTimeout(() => reject(new Error(`still running after 60 s: ${command}`)), 60_000)
      waiting = (text) => ((clearTimeout(timer), resolve(text)))
      bash.stdin.write(`${command}\nprintf '\\000done %d\\000' ${n}\n`)
    })
}

/** Markdown files whose examples are checked: the README and every page of docs/. */
async function pages(): Promise<string[]> {
  const docs = (await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md')).sort()
  return ['README.md', ...docs.map((f) => `docs/${f}`)]
}

const DEMO = /(127\.0\.0\.1|localhost):(3000|3001)\b/g

for (const page of await pages()) {
  t.test(page, async (t) => {
    const blocks = consoleBlocks(await readFile(join(root, page), 'utf8'))
    if (blocks.length === 0) return t.pass('no console examples')
    for (const block of blocks) {
      // A console block is a checked example: it must talk to the demo (else it belongs in ```sh).
      t.ok(block.commands.some((c) => /\bcurl\b/.test(c.text) && /(127\.0\.0\.1|localhost):300[01]\b/.test(c.text)), `${page}:${block.line}: a console block runs curl against the demo`)
    }
    const text = blocks.flatMap((b) => b.commands.map((c) => c.text)).join('\n')
    const wanted = DOC_PORTS.filter((documented) => text.includes(`:${documented}`))
    const started = await Promise.all(wanted.map(() => startDemo(t)))
    const ports = new Map(wanted.map((documented, i) => [String(documented), started[i]!]))
    const cwd = await mkdtemp(join(tmpdir(), 'mcp-docs-'))
    t.teardown(() => rm(cwd, { recursive: true, force: true }))
    const run = shell(t, cwd)
    const bindings: Bindings = new Map()
    for (const { commands } of blocks) {
      for (const command of commands) {
        const local = fill(command.text, bindings).replace(DEMO, (_all, host: string, port: string) => `${host}:${ports.get(port)}`)
        const printed = await run(local)
        // Answers name the documented port: map the real one back before comparing.
        const shown = [...ports].reduce((s, [documented, real]) => s.replaceAll(`:${real}`, `:${documented}`), printed)
        const why = compare(command.expected, shown, bindings)
        t.equal(why, undefined, `${page}:${command.line}: $ ${command.text.split('\n')[0]}`, { expected: command.expected, actual: shown.replace(/\r\n/g, '\n') })
        if (why !== undefined && process.env.DOCS_EXAMPLES_REPORT !== undefined) {
          await appendFile(process.env.DOCS_EXAMPLES_REPORT, `${JSON.stringify({ page, line: command.line, why, actual: shown.replace(/\r\n/g, '\n') })}\n`)
        }
      }
    }
  })
}

t.test('the matcher itself: placeholders, remembered values and JSON', async (t) => {
  const b: Bindings = new Map()
  t.ok(matchText('mcp-request-id: <id>', 'mcp-request-id: Xq3v9aBc_k2L.1z', b))
  t.equal(b.get('id'), 'Xq3v9aBc_k2L.1z', 'the first match is remembered')
  t.notOk(matchText('<id>', 'another', b), 'and must match again later')
  t.equal(fill('curl -H "Mcp-Request-Id: <id>" <other>', b), 'curl -H "Mcp-Request-Id: Xq3v9aBc_k2L.1z" <other>')
  t.ok(matchText('"eyJhbGci…"', '"eyJhbGciOiJkaXIi"', b), '… stands for any text')
  t.ok(matchText('<a> and <a>', 'x and x', b))
  t.notOk(matchText('<c> and <c>', 'x and y', b), 'twice in one line: the same value')
  t.equal(matchJson({ n: '<n>', s: 'a…' }, { n: 42, s: 'abc' }, b), undefined, 'a placeholder alone matches a number')
  t.match(matchJson({ a: 1 }, { a: 1, b: 2 }, b), /keys a,b instead of a/)
  t.match(matchJson([1], [1, 2], b), /not an array of 1/)
  t.match(matchJson({ a: 1 }, [1], b), /not an object/)
  t.match(matchJson({ s: '<n>' }, { s: { x: 1 } }, b), /does not match/)
  t.match(compare('HTTP/1.1 200 OK\netag: "<etag>"\n\n{"a":1}', 'HTTP/1.1 200 OK\r\n\r\n{"a":1}', b), /no etag header/)
  t.match(compare('HTTP/1.1 200 OK', 'HTTP/1.1 404 Not Found', b), /status/)
  t.match(compare('HTTP/1.1 200 OK\nx: 1', 'HTTP/1.1 200 OK\nX: 2', b), /x: "2" does not match/)
  t.match(compare('{"a":1}', 'oops', b), /not JSON/)
  t.match(compare('a\nb', 'a', b), /1 lines instead of 2/)
  t.match(compare('{"a":1}\n{"b":2}', '{"a":1}\nnope', b), /line 2 is not JSON/)
  t.match(compare('x\ny', 'x\nz', b), /line 2/)
  t.throws(() => consoleBlocks('```console\nanswer first\n```'), /starts with a "\$ " command/)
})
