import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { exportJWK, generateKeyPair } from 'jose'
import puppeteer from '../tools/puppeteer.js'
import t, { type Test } from 'tap'
import { loadConfig, corsFromConfig } from '../../src/config.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { CORS_REQUEST_HEADERS, CORS_RESPONSE_HEADERS, encodeJsonHeader } from '../../src/headers.js'
import { build } from '../helpers/helper.js'
import { prerequisite } from '../helpers/prerequisites.js'
import { reservePort } from '../helpers/redis-server.js'

const APP = 'http://app.example'
const EVIL = 'http://evil.example'
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
// What a browser's preflight of `fetch(url, { method: 'POST', headers: { ... } })` sends.
const preflight = (origin: string, headers: string, method = 'POST') => ({ origin, 'access-control-request-method': method, 'access-control-request-headers': headers })
const list = (v: unknown) => String(v ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '')
const corsHeaders = (headers: Record<string, unknown>) => Object.keys(headers).filter((k) => k.startsWith('access-control-'))
// Response headers a script reads without them being exposed (the Fetch standard's safelist), and the transport's own.
const READABLE = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'vary'])

/** An actual request from an allowed origin: its origin is answered, and every header a client reads is exposed. */
async function fromApp(t: Test, app: FastifyInstance, options: InjectOptions, origin = APP) {
  const res = await app.inject({ ...options, headers: { origin, ...options.headers } })
  const label = `${options.method ?? 'GET'} ${options.url as string}`
  t.equal(res.headers['access-control-allow-origin'], origin, `${label}: the origin is answered`)
  t.match(res.headers.vary, /\bOrigin\b/, `${label}: Vary: Origin`)
  const exposed = list(res.headers['access-control-expose-headers'])
  const hidden = Object.keys(res.headers).filter((k) => !k.startsWith('access-control-') && !READABLE.has(k) && !exposed.includes(k))
  t.strictSame(hidden, [], `${label}: every header it sends is exposed`)
  return res
}

t.test('a preflight from an allowed origin passes on REST routes and /mcp; another origin gets no CORS header', async (t) => {
  const { app } = await build(t, { allowedOrigins: [APP] })
  const asked = 'content-type, mcp-request-id, mcp-meta, mcp-arguments, mcp-protocol-version, authorization, if-none-match, last-event-id'
  for (const url of ['/tools/echo/calls', '/mcp', '/prompts/greeting', '/tasks/t1/cancel']) {
    const ok = await app.inject({ method: 'OPTIONS', url, headers: preflight(APP, asked) })
    t.equal(ok.statusCode, 204, `${url}: 204, not 405`)
    t.equal(ok.payload, '')
    t.equal(ok.headers['access-control-allow-origin'], APP)
    for (const h of list(asked)) t.ok(list(ok.headers['access-control-allow-headers']).includes(h), `${url}: ${h} allowed`)
    t.ok(list(ok.headers['access-control-allow-methods']).includes('delete'), 'DELETE (webhooks) allowed')
    t.equal(ok.headers['access-control-max-age'], '600', 'a preflight cache')
    t.notOk('access-control-allow-credentials' in ok.headers, 'credentials off')

    const refused = await app.inject({ method: 'OPTIONS', url, headers: preflight(EVIL, asked) })
    t.equal(refused.statusCode, 403, `${url}: a refused origin's preflight is the Origin check's 403`)
    const error = { code: -32600, message: 'Origin not allowed' }
    t.match(JSON.parse(refused.payload), url === '/mcp' ? { jsonrpc: '2.0', error } : error)
    t.strictSame(corsHeaders(refused.headers), [], 'and has no CORS header')
  }
  // SEP-2243's standard headers on /mcp, and a tool's own Mcp-Param-{name} (their names vary by tool).
  const modern = await app.inject({ method: 'OPTIONS', url: '/mcp', headers: preflight(APP, 'mcp-method,mcp-name,mcp-param-region') })
  t.equal(modern.statusCode, 204)
  const allowed = list(modern.headers['access-control-allow-headers'])
  t.ok(['mcp-method', 'mcp-name', 'mcp-param-region'].every((h) => allowed.includes(h)), 'Mcp-Method, Mcp-Name and Mcp-Param-Region allowed')
  t.match(modern.headers.vary, /Access-Control-Request-Headers/, 'an answer that depends on what was asked says so')
  const other = await app.inject({ method: 'OPTIONS', url: '/tools/echo/calls', headers: preflight(APP, 'x-other') })
  t.notOk(list(other.headers['access-control-allow-headers']).includes('x-other'), 'a header the binding does not use is not allowed on REST routes')

  const refused = await app.inject({ method: 'POST', url: '/tools/echo/calls', headers: { origin: EVIL, 'content-type': 'application/json' }, payload: { arguments: { text: 'x' } } })
  t.equal(refused.statusCode, 403)
  t.strictSame(corsHeaders(refused.headers), [], 'an actual request from a refused origin: 403, no CORS header')
  const noOrigin = await app.inject({ method: 'OPTIONS', url: '/tools/echo/calls', headers: { 'access-control-request-method': 'POST' } })
  t.equal(noOrigin.statusCode, 405, 'without Origin, no CORS: 405 as before')
  t.strictSame(corsHeaders(noOrigin.headers), [])
})

t.test('actual requests from an allowed origin: the answer and its headers are readable', async (t) => {
  const { app } = await build(t, { allowedOrigins: [APP], mcp: createDemoServer({ taskStepMs: 20 }) })
  const called = await fromApp(t, app, { method: 'POST', url: '/tools/echo/calls', headers: { 'content-type': 'application/json', 'mcp-request-id': 'page-1' }, payload: { arguments: { text: 'hi' } } })
  t.equal(called.statusCode, 200)
  t.equal(called.headers['mcp-request-id'], 'page-1')
  const replayed = await fromApp(t, app, { method: 'POST', url: '/tools/echo/calls', headers: { 'content-type': 'application/json', 'mcp-request-id': 'page-1' }, payload: { arguments: { text: 'hi' } } })
  t.equal(replayed.headers['idempotent-replayed'], 'true')
  const tools = await fromApp(t, app, { url: '/tools', headers: { 'mcp-meta': encodeJsonHeader({ progressToken: 'p' }) } })
  t.equal(tools.statusCode, 200)
  t.match(tools.headers.vary, /Origin.*Mcp-Protocol-Version, Mcp-Meta, Authorization/, 'the representation adds to Vary, not replaces it')
  const fresh = await fromApp(t, app, { url: '/tools', headers: { 'if-none-match': String(tools.headers.etag) } })
  t.equal(fresh.statusCode, 304, 'a revalidation is readable too')
  const task = await fromApp(t, app, { method: 'POST', url: '/tools/slow_compute/calls', headers: { 'content-type': 'application/json' }, payload: { arguments: { n: 2 }, _meta: TASKS } })
  t.equal(task.statusCode, 202)
  t.ok(task.headers.location !== undefined && task.headers['retry-after'] !== undefined, 'Location and Retry-After, exposed')
  const missing = await fromApp(t, app, { url: '/nope' })
  t.equal(missing.statusCode, 404)
  const session = await fromApp(t, app, { method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', 'mcp-method': 'ping' }, payload: { jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: {} } } })
  t.equal(session.statusCode, 200, '/mcp answers the page too')
})

t.test('a preflight carries no token and counts for no limit; the 401 and the 429 are readable', async (t) => {
  const keys = await generateKeyPair('RS256')
  const jwks = { keys: [{ ...(await exportJWK(keys.publicKey)), kid: 'k', alg: 'RS256', use: 'sig' }] }
  const { app } = await build(t, {
    allowedOrigins: [APP],
    oauth: { issuer: 'https://auth.example', audience: 'https://mcp.example', jwks },
    rateLimit: { max: 2 }
  })
  for (let i = 0; i < 5; i++) {
    const pre = await app.inject({ method: 'OPTIONS', url: '/tools/echo/calls', headers: preflight(APP, 'authorization,content-type') })
    t.equal(pre.statusCode, 204, `preflight ${i + 1}: no token needed, not limited`)
  }
  const denied = await fromApp(t, app, { method: 'POST', url: '/tools/echo/calls', headers: { 'content-type': 'application/json' }, payload: { arguments: { text: 'x' } } })
  t.equal(denied.statusCode, 401)
  t.match(denied.headers['www-authenticate'], /^Bearer /, 'the challenge is exposed')

  const { app: limited } = await build(t, { allowedOrigins: [APP], rateLimit: { max: 2 } })
  for (let i = 0; i < 3; i++) t.equal((await limited.inject({ method: 'OPTIONS', url: '/ping', headers: preflight(APP, 'mcp-meta', 'GET') })).statusCode, 204)
  t.equal((await fromApp(t, limited, { url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })).statusCode, 202)
  t.equal((await fromApp(t, limited, { url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })).statusCode, 202, 'the preflights were not counted')
  const over = await fromApp(t, limited, { url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.equal(over.statusCode, 429)
  t.ok(Number(over.headers['retry-after']) >= 1, 'Retry-After, exposed')
})

t.test('any origin is *, credentials only for a list and when asked, and cors: false leaves CORS to the app', async (t) => {
  await t.rejects(build(t, { loopbackByDefault: false, cors: { credentials: true } }), /cors.credentials \(MCP_CORS_CREDENTIALS\) needs allowedOrigins/, 'credentials need a list')
  const { app: any } = await build(t, { loopbackByDefault: false })
  const pre = await any.inject({ method: 'OPTIONS', url: '/tools/echo/calls', headers: preflight(EVIL, 'content-type') })
  t.equal(pre.statusCode, 204)
  t.equal(pre.headers['access-control-allow-origin'], '*', 'any origin: *')
  t.notOk('access-control-allow-credentials' in pre.headers, 'no credentials')
  const res = await any.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', origin: EVIL } })
  t.equal(res.headers['access-control-allow-origin'], '*')
  t.strictSame(corsHeaders((await any.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })).headers), [], 'no Origin, no CORS header')

  const { app: listed } = await build(t, { allowedOrigins: [APP], cors: { credentials: true } })
  const cred = await listed.inject({ method: 'OPTIONS', url: '/tools/echo/calls', headers: preflight(APP, 'content-type') })
  t.equal(cred.headers['access-control-allow-credentials'], 'true', 'credentials when configured')
  t.equal(cred.headers['access-control-allow-origin'], APP)

  const { app: off } = await build(t, { allowedOrigins: [APP], cors: false })
  const none = await off.inject({ method: 'OPTIONS', url: '/tools/echo/calls', headers: preflight(APP, 'content-type') })
  t.equal(none.statusCode, 405, 'cors: false: OPTIONS is the 405 again')
  t.strictSame(corsHeaders(none.headers), [])

  const { app: mounted } = await build(t, { allowedOrigins: [APP], prefix: '/mcp-http' })
  const under = await mounted.inject({ method: 'OPTIONS', url: '/mcp-http/tools/echo/calls', headers: preflight(APP, 'content-type') })
  t.equal(under.statusCode, 204, 'under a prefix too')
  t.equal(under.headers['access-control-allow-origin'], APP)
})

t.test('MCP_CORS_CREDENTIALS: off by default, and it needs a list of origins', async (t) => {
  t.strictSame(corsFromConfig(loadConfig({})), { credentials: false })
  t.strictSame(corsFromConfig(loadConfig({ MCP_CORS_CREDENTIALS: 'true', MCP_ALLOWED_ORIGINS: APP })), { credentials: true })
  t.strictSame(corsFromConfig(loadConfig({ MCP_CORS_CREDENTIALS: 'true' })), { credentials: true }, 'the loopback default is a list')
  t.throws(() => loadConfig({ MCP_CORS_CREDENTIALS: 'true', MCP_ALLOWED_ORIGINS: '*' }), /MCP_CORS_CREDENTIALS=true needs MCP_ALLOWED_ORIGINS/)
  t.throws(() => loadConfig({ MCP_CORS_CREDENTIALS: 'true', HOST: '0.0.0.0' }), /MCP_CORS_CREDENTIALS=true needs MCP_ALLOWED_ORIGINS/)
  t.throws(() => loadConfig({ MCP_CORS_CREDENTIALS: 'yes' }), /MCP_CORS_CREDENTIALS/)
})

t.test('the lists name the binding\'s headers', async (t) => {
  for (const h of ['mcp-meta', 'mcp-arguments', 'mcp-input-responses', 'mcp-request-state', 'mcp-request-id', 'mcp-protocol-version', 'mcp-session-id', 'mcp-message-group', 'mcp-group-id', 'authorization', 'if-none-match', 'last-event-id', 'content-type']) {
    t.ok(CORS_REQUEST_HEADERS.includes(h), `${h} may be sent`)
  }
  for (const h of ['etag', 'location', 'retry-after', 'mcp-request-id', 'mcp-protocol-version', 'mcp-session-id', 'mcp-message-group', 'www-authenticate', 'idempotent-replayed', 'allow']) {
    t.ok(CORS_RESPONSE_HEADERS.includes(h), `${h} may be read`)
  }
})

// Debian's chromium, driven by puppeteer-core: what a page on another origin can do with fetch.
const main = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url))

/** A page on an origin of its own: a plain HTTP server on another loopback port. */
async function pageServer(t: Test): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>another origin</title>'))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** `npm start` on a free port with MCP_ALLOWED_ORIGINS naming `origin`. */
async function startDemo(t: Test, env: Record<string, string>): Promise<string> {
  const { port, release } = await reservePort()
  await release()
  const child = spawn(process.execPath, [main], { env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'silent', ...env }, stdio: 'ignore' })
  t.teardown(async () => {
    if (child.exitCode === null) await (child.kill('SIGTERM'), once(child, 'exit'))
  })
  for (let i = 0; i < 1200; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) return `http://127.0.0.1:${port}`
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the demo server did not start')
}

// The browser example of docs/http.md, run in the page as an async function (a string: the tests
// compile without the DOM's types) against `server`; what it logs is what the page could read.
const doc = readFileSync(new URL('../../docs/http.md', import.meta.url), 'utf8')
const example = /<!-- browser example -->\n```js\n([^]*?)\n```/.exec(doc)![1]!
const inPage = (server: string) => `(async () => {\n${example.replace("'http://127.0.0.1:3000'", JSON.stringify(server))}\n})()`

t.test('Chromium: a page on an allowed origin calls a tool with fetch; a page on another origin is refused', async (t) => {
  const chromium = prerequisite('chromium')
  const allowed = await pageServer(t)
  const other = await pageServer(t)
  const server = await startDemo(t, { MCP_ALLOWED_ORIGINS: allowed })
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, timeout: 120_000, args: ['--no-sandbox', '--disable-gpu'] })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(120_000)
  const logged: string[] = []
  page.on('console', (message) => void logged.push(message.text()))

  await page.goto(`${allowed}/`)
  await page.evaluate(inPage(server))
  t.equal(logged[0], '200 page-call-1 {"content":[{"type":"text","text":"hello from a page"}],"resultType":"complete"}', 'the call went through its preflight, and the page read its Mcp-Request-Id')
  t.match(logged[1], /^200 "[^"]+"$/, 'a GET with Mcp-Meta, and its ETag read')
  t.equal(logged.length, 2, 'no error in the console')

  logged.length = 0
  await page.goto(`${other}/`)
  const refused = await page.evaluate(`${inPage(server)}.then(() => 'resolved', (err) => err.name + ': ' + err.message)`)
  t.equal(refused, 'TypeError: Failed to fetch', 'fetch rejects from an origin not listed')
  t.notOk(logged.some((l) => l.startsWith('200')), 'nothing was read')
  // What the browser was told: the Origin check's 403, with nothing that lets it through.
  const pre = await fetch(`${server}/tools/echo/calls`, { method: 'OPTIONS', headers: preflight(other, 'content-type,mcp-request-id') })
  t.equal(pre.status, 403)
  t.equal(pre.headers.get('access-control-allow-origin'), null)
})
