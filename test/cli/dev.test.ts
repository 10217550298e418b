import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { freePort } from '../helpers/redis-server.js'

const pkg = fileURLToPath(new URL('../../dist/src/index.js', import.meta.url))
/** The compiled entry, as `npm run dev` runs it (`npm test` builds first). */
const entry = fileURLToPath(new URL('../../dist/bin/dev.js', import.meta.url))

/** A user's server file: one tool named `name`. */
const serverFile = (name: string) => `import { McpServer } from ${JSON.stringify(pkg)}
export default () => {
  const mcp = new McpServer({ name: 'mine', version: '1' })
  mcp.tool({ name: ${JSON.stringify(name)} }, () => 'hi')
  return mcp
}
`

/** The server's tools, or [] while it is (re)starting. */
async function tools(port: number): Promise<string[]> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/tools`)
    return ((await res.json()) as { tools: { name: string }[] }).tools.map((x) => x.name)
  } catch {
    return []
  }
}

/** Wait until `check` holds (tap's timeout bounds the wait). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await sleep(100)
}

/** `node dist/bin/dev.js [file]` on a free port; stopped (SIGTERM, as Ctrl-C would) when the test ends. */
async function start(t: Test, file?: string, env: NodeJS.ProcessEnv = {}, command: string[] = [entry]): Promise<{ port: number; out: () => string; err: () => string; stop: () => Promise<void> }> {
  const port = await freePort()
  const child = spawn(process.execPath, [...command, ...(file === undefined ? [] : [file])], {
    // Without tap's NODE_OPTIONS (its loader and process tracking): a plain node, as a user runs it.
    env: { ...process.env, NODE_OPTIONS: '', PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
  t.teardown(stop)
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk))
  child.stderr.on('data', (chunk: Buffer) => (err += chunk))
  return { port, out: () => out, err: () => err, stop }
}

t.test("a user's server file: refused until it exports a server, then restarted on every change", async (t) => {
  const file = join(t.testdir(), 'server.mjs')
  writeFileSync(file, 'export default 42\n')
  const { port, out, err, stop } = await start(t, file)
  await until(() => err().includes('its default export must be an McpServer'))
  // node --watch says so once the refused process has exited: a change before that would stop it
  // with SIGTERM, before V8 writes its coverage (the refusal's lines, uncovered in a loaded run).
  await until(() => out().includes('Failed running'))
  writeFileSync(file, serverFile('first'))
  await until(async () => (await tools(port)).includes('first'))
  writeFileSync(file, serverFile('second'))
  await until(async () => (await tools(port)).includes('second'))
  t.same(await tools(port), ['second'])
  // pino-pretty's lines, not JSON: `[12:00:00.000] INFO: Server listening at ...`
  t.match(out(), /INFO.*: Server listening at http:\/\/127\.0\.0\.1:/)
  t.notMatch(out(), /^\{"level"/m)
  await stop()
  t.same(await tools(port), [], 'the server stopped with dev (SIGTERM, as Ctrl-C)')
})

t.test('without a file it serves the demo', async (t) => {
  const { port, stop } = await start(t)
  await until(async () => (await tools(port)).length > 0)
  t.ok((await tools(port)).includes('echo'))
  await stop()
})

t.test('mcp-pure-http dev is the same: the demo, restarted on change', async (t) => {
  const bin = fileURLToPath(new URL('../../dist/bin/mcp-pure-http.js', import.meta.url))
  const { port, stop } = await start(t, undefined, {}, [bin, 'dev'])
  await until(async () => (await tools(port)).length > 0)
  t.ok((await tools(port)).includes('echo'))
  await stop()
})

t.test('without pino-pretty the logs stay JSON lines, with a hint', async (t) => {
  // A resolve hook that makes pino-pretty missing, as it is for a user who did not install it.
  const dir = t.testdir({
    'hook.mjs': "export async function resolve(spec, ctx, next) { if (spec === 'pino-pretty') throw new Error('not installed'); return next(spec, ctx) }\n",
    'register.mjs': "import { register } from 'node:module'\nregister('./hook.mjs', import.meta.url)\n"
  })
  const { port, out, err, stop } = await start(t, undefined, { NODE_OPTIONS: `--import ${join(dir, 'register.mjs')}` })
  await until(async () => (await tools(port)).length > 0)
  // The log line and the answer come on two pipes: the answer can be read first.
  await until(() => out().includes('Server listening'))
  t.match(err(), 'dev: logs stay JSON lines; npm install --save-dev pino-pretty for readable ones')
  t.match(out(), /^\{"level":30,.*"msg":"Server listening at http:\/\/127\.0\.0\.1:/m)
  await stop()
})
