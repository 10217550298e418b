/* eslint-disable no-template-curly-in-string -- `${VAR}` in a config file's strings is what these tests are about */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import { EVERYTHING, FILESYSTEM, GATEWAY_BIN } from '../helpers/gateway-helper.js'
import { post, start } from '../helpers/gateway-cli-helper.js'

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
        broken: { url: 'http://127.0.0.1:1/mcp', required: false },
        missing: { command: '/nonexistent/mcp-server', required: false }
      },
      virtualServers: { some: { include: ['everything/echo', 'broken/*'] } }
    })
  )
  const gw = await start(t, ['gateway', '--config', config], { TEST_GREETING: 'hello-from-env' })
  const root = (await fetch(`${gw.base}/`).then((r) => r.json())) as {
    servers: { name: string; path: string; state: string; reason?: string }[]
    virtualServers: Record<string, unknown>[]
  }
  t.same(
    root.servers.map((s) => [s.name, s.path, s.state]),
    [
      ['everything', '/everything', 'up'],
      ['files', '/files', 'up'],
      ['broken', '/broken', 'down'],
      ['missing', '/missing', 'failed']
    ]
  )
  t.equal(root.servers[0]!.reason, undefined, 'an upstream that is up has no reason')
  t.match(root.servers[2]!.reason, /fetch failed|ECONNREFUSED/, 'why it is down')
  t.match(root.servers[3]!.reason, /ENOENT/, 'why it failed: the command is not there')
  t.match(gw.log(), /upstream could not start/, 'said once in the log')
  t.match(root.virtualServers, [{ name: 'some', path: '/some', servers: ['everything', 'broken'], state: 'degraded', reason: /^broken is down: / }], 'a virtual server over an upstream that is down')
  // The listing has the mounts' Host and Origin check (a page that rebinds its DNS name to loopback).
  const rebound = await request(`${gw.base}/`, { headers: { host: 'attacker.example:80' } })
  t.equal(rebound.statusCode, 403, 'another Host: 403')
  t.match(await rebound.body.json(), { code: -32600, message: 'Host not allowed' })
  const foreign = await request(`${gw.base}/`, { headers: { origin: 'https://attacker.example' } })
  t.equal(foreign.statusCode, 403, 'another Origin: 403')
  t.equal(foreign.headers['access-control-allow-origin'], undefined, 'and no CORS header')
  await foreign.body.dump()
  // CORS follows the same list (the loopback default, settled at listen): on GET / as on each mount.
  const own = gw.base.replace('127.0.0.1', 'localhost')
  for (const [path, method] of [['/', 'GET'], ['/everything/tools/echo/calls', 'POST'], ['/files/tools', 'GET']] as const) {
    const headers = { origin: own, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type, mcp-meta' }
    const pre = await request(`${gw.base}${path}`, { method: 'OPTIONS', headers })
    t.equal(pre.statusCode, 204, `${path}: a preflight from the server's own other origin`)
    t.equal(pre.headers['access-control-allow-origin'], own)
    await pre.body.dump()
    const refused = await request(`${gw.base}${path}`, { method: 'OPTIONS', headers: { ...headers, origin: 'https://attacker.example' } })
    t.equal(refused.statusCode, 403, `${path}: not from another`)
    t.equal(refused.headers['access-control-allow-origin'], undefined)
    await refused.body.dump()
  }
  const listing = await request(`${gw.base}/`, { headers: { origin: own } })
  t.equal(listing.headers['access-control-allow-origin'], own, 'GET / is readable from it')
  await listing.body.dump()
  const echo = await post(`${gw.base}/everything/tools/echo/calls`, { arguments: { message: 'mounted' } })
  t.equal(echo.body.content[0].text, 'Echo: mounted')
  const env = await post(`${gw.base}/everything/tools/get-env/calls`, { arguments: {} })
  t.match(env.body.content[0].text, /hello-from-env/, 'env from the config, ${VAR} from the environment')
  const note = await post(`${gw.base}/files/tools/read_text_file/calls`, { arguments: { path: join(dir, 'note.txt') } })
  t.equal(note.body.content[0].text, 'a note')
  const elsewhere = await post(`${gw.base}/files/tools/echo/calls`, { arguments: {} })
  t.same([elsewhere.status, elsewhere.body.isError], [200, true], "each mount has its own catalogue: server-filesystem's own answer for a tool it lacks")
  t.match(elsewhere.body.content[0].text, /echo not found/)
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
