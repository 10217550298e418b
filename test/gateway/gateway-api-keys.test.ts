import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parseGatewayArgs } from '../../src/gateway/options.js'
import { EVERYTHING, GATEWAY_BIN } from '../helpers/gateway-helper.js'
import { start } from '../helpers/gateway-cli-helper.js'

const KEY = randomBytes(32).toString('base64')
const OTHER = randomBytes(32).toString('hex')

t.test('--api-key: repeatable, principal:key[:scopes], as MCP_API_KEYS', async (t) => {
  t.same(parseGatewayArgs(['--api-key', `ci:${KEY}:notes:read notes:write`, '--api-key', `bot:${OTHER}`, '--', 'x']).apiKeys, [
    { principal: 'ci', key: KEY, scopes: ['notes:read', 'notes:write'] },
    { principal: 'bot', key: OTHER }
  ])
  t.same(parseGatewayArgs(['--', 'x']).apiKeys, [], 'none by default')
  t.throws(() => parseGatewayArgs(['--api-key', KEY, '--', 'x']), /--api-key: entry 1 is not principal:key or principal:key:scopes/)
  t.throws(() => parseGatewayArgs(['--api-key']), /--api-key needs a value/)
})

t.test('gateway --api-key: the mounts and GET / need the key; the key is never logged', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-keys-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'mcp.json')
  writeFileSync(config, JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } }))
  const gw = await start(t, ['gateway', '--config', config, '--api-key', `ci:${KEY}`], { MCP_API_KEYS: `ops:${OTHER}`, LOG_LEVEL: 'trace' })
  for (const path of ['/', '/everything/tools']) {
    const none = await fetch(`${gw.base}${path}`)
    t.equal(none.status, 401, `${path} without a key`)
    t.equal(none.headers.get('www-authenticate'), 'Bearer realm="mcp"', `${path}: the challenge`)
    t.match(await none.json(), { code: -32600, message: /send an API key/ })
    const wrong = await fetch(`${gw.base}${path}`, { headers: { authorization: `Bearer ${randomBytes(32).toString('hex')}` } })
    t.equal(wrong.status, 401, `${path} with a wrong key`)
    for (const key of [KEY, OTHER]) t.equal((await fetch(`${gw.base}${path}`, { headers: { authorization: `Bearer ${key}` } })).status, 200, `${path} with a key`)
  }
  const root = (await fetch(`${gw.base}/`, { headers: { authorization: `Bearer ${KEY}` } }).then((r) => r.json())) as { servers: { name: string }[] }
  t.same(root.servers.map((s) => s.name), ['everything'])
  t.match(gw.log(), /"principals":\["ops","ci"\]/, 'the start names the principals: the variable\'s, then the flag\'s')
  t.notOk(gw.log().includes(KEY) || gw.log().includes(OTHER), 'no key in the log')
})

t.test('gateway --api-key refusals stop the start before any upstream runs', async (t) => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [['--api-key', `ci:${KEY}`, '--', '/nonexistent/never-started'], { MCP_API_KEYS: `ci:${OTHER}` }, /principal ci has more than one key/],
    [['--api-key', 'ci:short', '--', '/nonexistent/never-started'], {}, /principal ci: the key is shorter than 32 characters/],
    [['--api-key', `ci:${KEY}`, '--url', 'http://127.0.0.1:1/mcp', '--forward-authorization'], {}, /forwardAuthorization \(--forward-authorization\) would send the API keys/],
    [['--url', 'http://127.0.0.1:1/mcp', '--forward-authorization'], { MCP_API_KEYS: `ci:${KEY}` }, /would send the API keys/]
  ]
  for (const [args, env, reason] of cases) {
    const child = spawn(process.execPath, [GATEWAY_BIN, 'gateway', ...args], { env: { ...process.env, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr!.on('data', (d: Buffer) => (err += String(d)))
    const [code] = await once(child, 'exit')
    t.equal(code, 1, `${args.join(' ')}: exit code`)
    t.match(err, reason)
    t.notMatch(err, /never-started|ENOENT|fetch failed/, 'no upstream was tried')
    t.notOk(err.includes(KEY) || err.includes(OTHER), 'no key in the message')
  }
})
