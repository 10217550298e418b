import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { EVERYTHING, FILESYSTEM, GATEWAY_BIN, everythingHttp, until } from './gateway-helper.js'
import { freePort } from './redis-server.js'

interface Running {
  base: string
  child: ChildProcess
  log: () => string
}

/** `mcp-pure-http <args>` on a free port, until the test ends (SIGTERM, as an orchestrator stops it). */
async function start(t: Test, args: string[], env: Record<string, string> = {}): Promise<Running> {
  const port = await freePort()
  const child = spawn(process.execPath, [GATEWAY_BIN, ...args], {
    env: { ...process.env, PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  child.stderr!.on('data', (d: Buffer) => (out += String(d)))
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  })
  const base = `http://127.0.0.1:${port}`
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`)
    return fetch(`${base}/health`).then((r) => r.ok, () => false)
  }, 'the server')
  return { base, child, log: () => out }
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))

/** Whether a process id is alive. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('gateway -- <command>: a stdio server at the root; SIGTERM stops the child too', async (t) => {
  const gw = await start(t, ['gateway', '--', process.execPath, EVERYTHING, 'stdio'])
  const echo = await post(`${gw.base}/tools/echo/calls`, { arguments: { message: 'cli' } })
  t.equal(echo.body.content[0].text, 'Echo: cli')
  t.equal((await fetch(`${gw.base}/ready`)).status, 200)
  t.match(gw.log(), /upstream stderr/, "the child's stderr in the log")
  const children = () => spawnSyncChildren(gw.child.pid!)
  const before = await children()
  t.ok(before.length > 0, 'a child runs')
  gw.child.kill('SIGTERM')
  const [code] = await once(gw.child, 'exit')
  t.equal(code, 0)
  for (const c of before) t.notOk(alive(c), `child ${c} stopped`)
})

t.test('gateway --url with --header, and MCP_* settings apply', async (t) => {
  const upstream = await everythingHttp(t)
  const gw = await start(t, ['gateway', '--url', upstream.url, '--header', 'X-Api-Key: secret'], { MCP_PAGE_SIZE: '2' })
  const tools = (await fetch(`${gw.base}/tools`).then((r) => r.json())) as { tools: unknown[]; nextCursor?: string }
  t.equal(tools.tools.length, 2, 'MCP_PAGE_SIZE')
  t.type(tools.nextCursor, 'string')
  const sum = await post(`${gw.base}/tools/get-sum/calls`, { arguments: { a: 5, b: 6 } })
  t.match(sum.body.content[0].text, /11/)
})

t.test('gateway --config: each server under /{name}, GET / lists them with their state', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'note.txt'), 'a note')
  const config = join(dir, 'mcp.json')
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        everything: { command: process.execPath, args: [EVERYTHING, 'stdio'], env: { GREETING: '${TEST_GREETING}' } },
        files: { command: process.execPath, args: [FILESYSTEM, dir] },
        broken: { url: 'http://127.0.0.1:1/mcp', required: false }
      }
    })
  )
  const gw = await start(t, ['gateway', '--config', config], { TEST_GREETING: 'hello-from-env' })
  const root = (await fetch(`${gw.base}/`).then((r) => r.json())) as { servers: { name: string; path: string; state: string }[] }
  t.same(
    root.servers.map((s) => [s.name, s.path, s.state]),
    [
      ['everything', '/everything', 'up'],
      ['files', '/files', 'up'],
      ['broken', '/broken', 'down']
    ]
  )
  const echo = await post(`${gw.base}/everything/tools/echo/calls`, { arguments: { message: 'mounted' } })
  t.equal(echo.body.content[0].text, 'Echo: mounted')
  const env = await post(`${gw.base}/everything/tools/get-env/calls`, { arguments: {} })
  t.match(env.body.content[0].text, /hello-from-env/, 'env from the config, ${VAR} from the environment')
  const note = await post(`${gw.base}/files/tools/read_text_file/calls`, { arguments: { path: join(dir, 'note.txt') } })
  t.equal(note.body.content[0].text, 'a note')
  t.equal((await post(`${gw.base}/files/tools/echo/calls`, { arguments: {} })).status, 404, 'each mount has its own catalogue')
  const doc = (await fetch(`${gw.base}/files/openapi.json`).then((r) => r.json())) as { paths: Record<string, unknown> }
  t.ok(doc.paths['/files/tools/read_text_file/calls'], 'an OpenAPI document per mount')
  t.equal((await fetch(`${gw.base}/ready`)).status, 200, 'the broken one is not required')
})

t.test('demo runs what npm start runs; bad arguments say how to use it', async (t) => {
  const demo = await start(t, ['demo'])
  const tools = (await fetch(`${demo.base}/tools`).then((r) => r.json())) as { tools: { name: string }[] }
  t.ok(tools.tools.some((x) => x.name === 'get_weather'))
  for (const [args, code, pattern] of [
    [[], 2, /Usage:/],
    [['--help'], 0, /mcp-pure-http gateway --config/],
    [['gateway', '--url', 'ftp://x'], 1, /not an http\(s\) URL/]
  ] as const) {
    const child = spawn(process.execPath, [GATEWAY_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr!.on('data', (d: Buffer) => (err += String(d)))
    const [exit] = await once(child, 'exit')
    t.equal(exit, code, args.join(' '))
    t.match(err, pattern)
  }
})

/** The process ids whose parent is `pid`. */
async function spawnSyncChildren(pid: number): Promise<number[]> {
  const ps = spawn('ps', ['-o', 'pid=', '--ppid', String(pid)])
  let out = ''
  ps.stdout.on('data', (d: Buffer) => (out += String(d)))
  await once(ps, 'exit')
  return out.split('\n').map((s) => Number(s.trim())).filter((n) => n > 0)
}
