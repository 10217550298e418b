import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import t from 'tap'
import { McpServer } from '../../src/core/mcp-server.js'
import { PAGE_CSP } from '../../src/http/page-security.js'
import { launch, startDemo, watched } from '../helpers/browser.js'
import { start } from '../helpers/gateway-cli-helper.js'
import { oddUpstreamNamed } from '../helpers/gateway-odd.js'
import { DEMO_TOOLS, build, call } from '../helpers/helper.js'

t.setTimeout(600_000)

t.test('/docs of the demo: every tool has an operation, and "try it" on echo calls the server', async (t) => {
  const port = await startDemo(t)
  const origin = `http://127.0.0.1:${port}`
  const refused = await fetch(`${origin}/ping`, { headers: { origin: 'http://evil.example' } })
  t.equal(refused.status, 403, 'the Host and Origin checks are on')

  const { page, problems, foreign, statuses } = await watched(await launch(t), origin)

  const loaded = await page.goto(`${origin}/docs`, { waitUntil: 'networkidle0' })
  t.equal(loaded?.status(), 200)
  const title = await page.$eval('.swagger-ui .info .title', (e) => e.textContent ?? '')
  t.match(title, /^MCP Pure HTTP demo/, 'the page rendered the document (not blank)')
  const operations = await page.$$eval('.opblock', (blocks) => blocks.map((b) => b.id))
  for (const tool of DEMO_TOOLS) t.ok(operations.includes(`operations-tool_calls-callTool_${tool}`), `an operation for ${tool}`)
  t.notOk(operations.some((id) => id.includes('docs')), 'the page itself is not in the document')

  const echo = '#operations-tool_calls-callTool_echo'
  await page.click(`${echo} .opblock-summary`)
  const body = await page.waitForSelector(`${echo} textarea.body-param__text`)
  t.strictSame(JSON.parse(await body!.evaluate((e) => (e as unknown as { value: string }).value)), { arguments: { text: 'string' } }, 'pre-filled with a minimal body')
  await body!.click()
  await page.keyboard.down('Control')
  await page.keyboard.press('a')
  await page.keyboard.up('Control')
  await page.keyboard.press('Backspace')
  await body!.type('{"arguments":{"text":"hello from the browser"}}')
  await page.click(`${echo} button.execute`)
  // A string, evaluated in the page (the tests compile without the DOM's types).
  await page.waitForFunction(`document.querySelector('${echo} .live-responses-table')?.textContent.includes('hello from the browser')`, { timeout: 60_000 })
  const shown = await page.$eval(`${echo} .live-responses-table`, (e) => e.textContent ?? '')
  t.match(shown, /"text": "hello from the browser"/, 'the echoed text is in the page')
  t.strictSame(statuses.get('/tools/echo/calls'), [200], 'one call, to this server, answered 200')
  const link = await page.$eval('#mcp-console-link a', (a) => [a.textContent, (a as unknown as { href: string }).href])
  t.strictSame(link, ['the console', `${origin}/console`], 'the page links the console')
  t.strictSame(problems, [], 'no script errors')
  t.strictSame(foreign, [], 'nothing fetched from another host')
})

t.test('/docs lets a user set Mcp-Meta: a field on every GET, _meta in the bodies of the MCP POSTs', async (t) => {
  const { app } = await build(t, { docs: true })
  const document = (await call(app, { url: '/docs/json' })).body as {
    paths: Record<string, Record<string, { parameters?: { in: string; name: string }[]; requestBody?: { content: { 'application/json': { schema: { properties?: object } } } } }>>
  }
  const gets = Object.entries(document.paths).filter(([path, ops]) => ops.get !== undefined && path !== '/openapi.json')
  t.ok(gets.length >= 10, 'the GETs of the binding')
  for (const [path, ops] of gets) t.ok(ops.get!.parameters?.some((p) => p.in === 'header' && p.name === 'mcp-meta'), `GET ${path}: Mcp-Meta`)
  const posts = Object.entries(document.paths).filter(([path, ops]) => ops.post !== undefined && /^\/(tools|prompts|resources\/|tasks|completions)/.test(path))
  t.ok(posts.length > 10)
  for (const [path, ops] of posts) t.hasProp(ops.post!.requestBody?.content['application/json'].schema.properties ?? {}, '_meta', `POST ${path}: _meta in the body`)
})

t.test('docs is off unless asked for, and hidden from the document when on', async (t) => {
  const { app: off } = await build(t)
  t.equal((await call(off, { url: '/docs' })).status, 404)
  const { app: on } = await build(t, { docs: true })
  const page = await on.inject({ url: '/docs' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.payload, /<title>MCP Pure HTTP demo: API reference<\/title>/)
  const { app: untitled } = await build(t, { docs: true, mcp: new McpServer({ name: 'plain', version: '1.0.0' }) })
  t.match((await untitled.inject({ url: '/docs' })).payload, /<title>plain: API reference<\/title>/, 'the name when there is no title')
  const json = await call(on, { url: '/docs/json' })
  t.strictSame(json.body, (await call(on, { url: '/openapi.json' })).body, '/docs/json is the server\'s own document')
  t.notOk(Object.keys(json.body.paths).some((p) => p.startsWith('/docs')))
})

// What an upstream (or a careless server) may call itself: markup that runs a script if unescaped.
const HOSTILE = 'evil</title><script>window.__pwned=1</script><title>'
const ISSUER = 'https://auth.example.test'
const AUDIENCE = 'https://gateway.example.test'
const keys = await generateKeyPair('RS256', { extractable: true })
const JWKS = { keys: [{ ...(await exportJWK(keys.publicKey)), kid: 'docs-1', alg: 'RS256', use: 'sig' }] }
const token = () =>
  new SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'RS256', kid: 'docs-1' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('30m').sign(keys.privateKey)
const oauth = { issuer: ISSUER, audience: AUDIENCE, jwks: JWKS }

t.test('/docs escapes the server name, and every page response carries the strict policy', async (t) => {
  const { app } = await build(t, { docs: true, mcp: new McpServer({ name: HOSTILE, version: '1.0.0' }) })
  const page = await app.inject({ url: '/docs' })
  t.equal(page.statusCode, 200)
  t.notMatch(page.payload, /<script>window/, 'no markup from the name')
  t.match(page.payload, '<title>evil&lt;/title&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;title&gt;: API reference</title>')
  t.notMatch(page.payload, /<script>|<style>| style=| on[a-z]+=/i, 'nothing inline for the policy to allow')
  for (const url of ['/docs', '/docs/', '/docs/static/swagger-initializer.js', '/docs/static/theme/token.js', '/docs/static/theme/console-link.js', '/docs/static/swagger-ui.css', '/docs/json']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, url)
    t.equal(res.headers['content-security-policy'], PAGE_CSP, `${url}: the policy`)
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${url}: nosniff`)
  }
  t.match(PAGE_CSP, /script-src 'self';/)
  t.notMatch(PAGE_CSP, /unsafe-/, 'no inline script or style, no eval')
  t.match(PAGE_CSP, /frame-ancestors 'none'/)
})

t.test('/docs under a prefix links its files under the prefix', async (t) => {
  const { app } = await build(t, { docs: true, prefix: '/m' })
  const page = await app.inject({ url: '/m/docs' })
  const links = [...page.payload.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]!)
  t.ok(links.length > 4)
  for (const link of links) t.equal((await app.inject({ url: link })).statusCode, 200, link)
})

t.test('with OAuth, the shell of /docs is public and its document needs a token like /openapi.json', async (t) => {
  const { app } = await build(t, { docs: true, oauth, mcp: new McpServer({ name: HOSTILE, version: '1.0.0' }) })
  const page = await app.inject({ url: '/docs' })
  t.equal(page.statusCode, 200, 'the page loads without a token (it asks for one)')
  t.match(page.payload, '<title>API reference</title>', 'and names no server')
  for (const url of ['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/theme/token.js', '/docs/static/theme/token.css']) {
    t.equal((await app.inject({ url })).statusCode, 200, `${url} is public`)
  }
  const challenge = (await call(app, { url: '/openapi.json' })).headers['www-authenticate']
  t.match(challenge, /^Bearer realm="mcp", resource_metadata="https:\/\/gateway\.example\.test\/\.well-known\/oauth-protected-resource"$/)
  const bearer = { authorization: `Bearer ${await token()}` }
  for (const url of ['/docs/json', '/docs/yaml']) {
    const refused = await call(app, { url })
    t.equal(refused.status, 401, `${url} without a token`)
    t.equal(refused.headers['www-authenticate'], challenge, 'the same challenge as the API')
    t.match(refused.body, { code: Number, message: /Authorization required/ }, 'our error shape')
    t.equal(refused.headers['content-security-policy'], PAGE_CSP)
    const shown = await app.inject({ url, headers: bearer })
    t.equal(shown.statusCode, 200, `${url} with one`)
    t.ok(shown.payload.includes('openapi'), 'the document')
  }
})

// The document's refusal is the page's cue to ask for a token; Chromium logs every 4xx load.
const REFUSAL = /status of 401/

const upstream = oddUpstreamNamed(HOSTILE)

t.test("a gateway's /docs runs no script of a hostile upstream name", async (t) => {
  const browser = await launch(t)
  // Without authentication the name is in the page's <title>, where it once closed the element.
  const open = await start(t, ['gateway', '--', upstream.command, ...upstream.args])
  const plain = await watched(browser, open.base, REFUSAL)
  const loaded = await plain.page.goto(`${open.base}/docs`, { waitUntil: 'networkidle0' })
  t.equal(loaded?.status(), 200)
  t.equal(loaded?.headers()['content-security-policy'], PAGE_CSP, 'the policy is sent')
  await plain.page.waitForSelector('.swagger-ui .info .title')
  t.equal(await plain.page.title(), `${HOSTILE}: API reference`, 'the title shows the name as text')
  t.match(await plain.page.$eval('.swagger-ui .info .title', (e) => e.textContent ?? ''), HOSTILE, 'so does the reference')
  t.equal(await plain.page.evaluate('typeof window.__pwned'), 'undefined', 'no script of the name ran')
  t.strictSame(plain.problems, [], 'no script errors, no policy violations')
  t.strictSame(plain.foreign, [])
})

t.test('a gateway under OAuth: GET / and each mount\'s document need a token; its /docs asks for one', async (t) => {
  const jwks = createServer((_request, response) => response.setHeader('content-type', 'application/json').end(JSON.stringify(JWKS)))
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => jwks.close(() => resolve())))
  const dir = mkdtempSync(join(tmpdir(), 'docs-gw-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'mcp.json')
  writeFileSync(config, JSON.stringify({ mcpServers: { odd: upstream, other: upstream } }))
  const gw = await start(t, ['gateway', '--config', config], {
    MCP_OAUTH_AUDIENCE: AUDIENCE,
    MCP_OAUTH_ISSUER: ISSUER,
    MCP_OAUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`
  })
  const jwt = await token()
  const challenge = (await fetch(`${gw.base}/odd/tools`)).headers.get('www-authenticate')
  t.match(challenge, /^Bearer realm="mcp", resource_metadata="https:\/\/gateway\.example\.test\/odd\/\.well-known\/oauth-protected-resource"$/)
  for (const path of ['/', '/odd/docs/json', '/odd/docs/yaml', '/other/docs/json']) {
    const refused = await fetch(`${gw.base}${path}`)
    t.equal(refused.status, 401, `${path} without a token`)
    t.equal(refused.headers.get('www-authenticate'), path.startsWith('/other') ? challenge!.replace('/odd/', '/other/') : challenge, `${path}: the API's challenge`)
    t.match(await refused.json(), { code: Number, message: /Authorization required/ }, `${path}: our error shape`)
    const shown = await fetch(`${gw.base}${path}`, { headers: { authorization: `Bearer ${jwt}` } })
    t.equal(shown.status, 200, `${path} with a token`)
    if (path !== '/') t.match(await shown.text(), /callTool_fine/)
  }
  const root = (await fetch(`${gw.base}/`, { headers: { authorization: `Bearer ${jwt}` } }).then((r) => r.json())) as { servers: { serverInfo: { name: string } }[] }
  t.strictSame(root.servers.map((s) => s.serverInfo.name), [HOSTILE, HOSTILE], 'the listing, with a token')

  const authed = await watched(await launch(t), gw.base, REFUSAL)
  const shell = await authed.page.goto(`${gw.base}/odd/docs`, { waitUntil: 'networkidle0' })
  t.equal(shell?.status(), 200, 'the shell loads without a token')
  t.equal(await authed.page.title(), 'API reference', 'and names no server')
  const form = '#mcp-docs-token'
  await (await authed.page.waitForSelector(`${form} input`))!.type('not.a.token')
  t.strictSame(authed.statuses.get('/odd/docs/json'), [401], 'the document was refused')
  t.match(await authed.page.$eval(form, (e) => e.textContent ?? ''), /needs an access token or API key/)
  await authed.page.click(`${form} button`)
  // The page reloads with the token, which the server refuses: the page asks again, saying so.
  await authed.page.waitForFunction(`document.querySelector('${form}')?.textContent.includes('refused that token')`)
  t.strictSame(authed.statuses.get('/odd/docs/json'), [401, 401], 'a bad token is refused')
  await (await authed.page.waitForSelector(`${form} input`))!.type(jwt)
  await authed.page.click(`${form} button`)
  await authed.page.waitForSelector('.swagger-ui .info .title')
  t.strictSame(authed.statuses.get('/odd/docs/json'), [401, 401, 200], 'then fetched with the good one')
  t.match(await authed.page.$eval('.swagger-ui .info .title', (e) => e.textContent ?? ''), HOSTILE)
  t.equal(await authed.page.$(form), null, 'no form once the reference shows')

  // "Try it out" carries the same token: Swagger UI's Authorize holds it.
  const fine = '#operations-tool_calls-callTool_fine'
  await authed.page.click(`${fine} .opblock-summary`)
  await authed.page.waitForSelector(`${fine} button.execute`)
  await authed.page.click(`${fine} button.execute`)
  await authed.page.waitForFunction(`document.querySelector('${fine} .live-responses-table') !== null`, { timeout: 60_000 })
  t.strictSame(authed.statuses.get('/odd/tools/fine/calls'), [200], 'the call was authorized')
  t.equal(await authed.page.evaluate('typeof window.__pwned'), 'undefined')
  t.strictSame(authed.problems, [], 'no script errors, no policy violations')
  t.strictSame(authed.foreign, [], 'the token went nowhere else')
})
