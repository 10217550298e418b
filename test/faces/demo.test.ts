import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { freePort, reservePort } from '../helpers/redis-server.js'

// `npm start` runs the built entry point; `npm test` builds first (pretest).
const main = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url))

t.test('the demo server starts on HOST:PORT, serves the catalogue, and stops on SIGTERM', async (t) => {
  const port = await freePort()
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => child.kill('SIGKILL'))
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  await new Promise<void>((resolve, reject) => {
    const check = (d: Buffer) => String(d).includes('Server listening') && resolve()
    child.stdout.on('data', check)
    child.once('exit', (code) => reject(new Error(`exited early with ${code}`)))
  })
  t.match(out, /every client shares one anonymous logical connection/, 'the anonymous connection is announced')
  t.match(out, /sealed with an ephemeral key/, 'and so is the ephemeral state key')
  const discover = await fetch(`http://127.0.0.1:${port}/discover`)
  t.equal(discover.status, 200)
  t.equal(((await discover.json()) as { serverInfo: { name: string } }).serverInfo.name, 'mcp-pure-http-demo')
  const add = await fetch(`http://127.0.0.1:${port}/tools/add/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ arguments: { a: 1.5, b: 2 } })
  })
  t.same(((await add.json()) as { structuredContent: unknown }).structuredContent, { sum: 3.5 })
  child.kill('SIGTERM')
  const [code] = await once(child, 'exit')
  t.equal(code, 0, 'a clean exit on SIGTERM')
})

t.test('MCP_STATE_KEYS: instances with the same ring read each other\'s requestState', async (t) => {
  const ring = `k1:${Buffer.alloc(32, 7).toString('base64url')}`
  // Both ports held until each child is spawned: distinct, and taken by nobody else meanwhile.
  const reserved = [await reservePort(), await reservePort()]
  const ports = reserved.map((r) => r.port)
  const start = (port: number) =>
    spawn(process.execPath, [main], { env: { ...process.env, PORT: String(port), MCP_STATE_KEYS: ring }, stdio: ['ignore', 'pipe', 'pipe'] })
  const children: ReturnType<typeof start>[] = []
  for (const { port, release } of reserved) {
    await release()
    children.push(start(port))
  }
  t.teardown(async () => {
    // SIGTERM and wait: a clean exit is also what writes the child's coverage.
    await Promise.all(children.filter((c) => c.exitCode === null).map((c) => ((c.kill('SIGTERM'), once(c, 'exit')))))
  })
  const logs = await Promise.all(
    children.map(
      (child) =>
        new Promise<string>((resolve, reject) => {
          let out = ''
          child.stdout.on('data', (d) => {
            out += d
            if (out.includes('Server listening')) resolve(out)
          })
          child.once('exit', (code) => reject(new Error(`exited early with ${code}:\n${out}`)))
        })
    )
  )
  for (const log of logs) t.notMatch(log, /ephemeral key/)
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }
  const post = async (port: number, body: unknown) =>
    (await fetch(`http://127.0.0.1:${port}/tools/get_weather/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    }).then((r) => r.json())) as { requestState?: string; content?: { text: string }[] }
  const first = await post(ports[0]!, { _meta: meta, arguments: {} })
  const second = await post(ports[1]!, {
    _meta: meta,
    arguments: {},
    requestState: first.requestState,
    inputResponses: { location: { action: 'accept', content: { location: 'Lima' } } }
  })
  t.match(second.content?.[0]?.text, /^Weather in Lima: /)
})

t.test('a port already in use stops the start with exit code 1', async (t) => {
  const blocker = createServer().listen(0, '127.0.0.1')
  await once(blocker, 'listening')
  t.teardown(() => blocker.close())
  const { port } = blocker.address() as { port: number }
  const child = spawn(process.execPath, [main], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr.on('data', (d) => (err += d))
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(err, /EADDRINUSE/)
})

t.test('invalid configuration stops the start with a clear message', async (t) => {
  const child = spawn(process.execPath, [main], { env: { ...process.env, PORT: 'abc' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr.on('data', (d) => (err += d))
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(err, /Invalid configuration:\n {2}PORT="abc"/)
  t.notMatch(err, /at .*\.js:\d+/, 'no stack trace for a configuration mistake')
})
