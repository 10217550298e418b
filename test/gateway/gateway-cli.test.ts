import { spawn } from 'node:child_process'
import { once } from 'node:events'
import t from 'tap'
import { EVERYTHING, GATEWAY_BIN, everythingHttp } from '../helpers/gateway-helper.js'
import { alive, post, spawnSyncChildren, start } from '../helpers/gateway-cli-helper.js'
import { stubbornUpstream } from '../helpers/gateway-hostile.js'

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

t.test('a gateway killed outright (SIGKILL, as a crash) takes its stdio child with it', async (t) => {
  const { command, args } = stubbornUpstream as { command: string; args: string[] }
  const gw = await start(t, ['gateway', '--', command, ...args])
  t.equal((await post(`${gw.base}/tools/ok/calls`, { arguments: {} })).body.content[0].text, 'ok')
  const [child] = await spawnSyncChildren(gw.child.pid!)
  t.ok(child !== undefined && alive(child), 'its child runs')
  gw.child.kill('SIGKILL')
  await once(gw.child, 'exit')
  // setpriv --pdeathsig: the kernel signals the child when its parent dies (its stdin's end alone would not end it).
  for (let i = 0; i < 1000 && alive(child!); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.notOk(alive(child!), 'the child ended with it, no orphan')
})

t.test('gateway -- <a command that cannot start>: exits 1 at once, saying why', async (t) => {
  for (const [args, reason] of [
    [['/nonexistent/mcp-server'], /could not start: spawn \/nonexistent\/mcp-server ENOENT/],
    [[process.execPath, '-e', 'console.error("no config file"); process.exit(3)'], /could not start: .*closed.*\(its stderr: no config file\)/]
  ] as const) {
    const child = spawn(process.execPath, [GATEWAY_BIN, 'gateway', '--', ...args], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr!.on('data', (d: Buffer) => (err += String(d)))
    const [code] = await once(child, 'exit')
    t.equal(code, 1, `${args[0]}: exit code`)
    t.match(err, reason)
    t.notMatch(err, /retryInMs/, 'not retried')
  }
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
