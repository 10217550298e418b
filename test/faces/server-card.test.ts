import { get } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { mcpPlugin } from '../../src/app.js'
import { loadConfig, serverCardFromConfig } from '../../src/config.js'
import { McpServer } from '../../src/core/mcp-server.js'
import { ConfigurationError } from '../../src/errors.js'
import { aiCatalog, buildServerCard, PURE_HTTP_META } from '../../src/http/server-card.js'
import { SUPPORTED_VERSIONS } from '../../src/protocol.js'
import { AiCatalogSchema, SERVER_CARD_SCHEMA_URL, ServerCardSchema } from '../../src/schema/server-card.js'
import { buildServer, type BuildServerOptions } from '../../src/server.js'

// The Server Card (SEP-2127, experimental) on a real socket: its fields from the catalogue, its
// schema, public and readable from any origin, cached by ETag, one per mount, and the AI Catalog.

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default
const ajv = new Ajv2020({ strict: false })
addFormats(ajv)
const validCard = ajv.compile(ServerCardSchema)
const validCatalog = ajv.compile(AiCatalogSchema)

const KEY = 'card-key-0123456789abcdefghijklmnopqrstuvw'
const PUBLIC = 'https://mcp.example.com'

function catalogue(): McpServer {
  const mcp = new McpServer({ name: 'com.example/notes', version: '2.3.4', title: 'Notes', description: 'Keeps notes for a team.' })
  mcp.tool({ name: 'echo' }, () => ({ content: [] }))
  return mcp
}

async function listen(t: Test, options: Partial<BuildServerOptions>): Promise<{ base: string; mcp: McpServer; app: Awaited<ReturnType<typeof buildServer>> }> {
  const mcp = options.mcp ?? catalogue()
  const app = await buildServer({ logger: false, ...options, mcp })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, mcp, app }
}

t.test('off by default: no card, no catalogue', async (t) => {
  const { base } = await listen(t, {})
  t.equal((await fetch(`${base}/mcp/server-card`)).status, 404)
  t.equal((await fetch(`${base}/.well-known/ai-catalog.json`)).status, 404)
  t.equal(serverCardFromConfig(loadConfig({})), false, 'MCP_SERVER_CARD defaults to false')
})

t.test("the card: the catalogue's identity, the endpoints under the public URL, our versions; valid, cached, public", async (t) => {
  const { base, mcp } = await listen(t, { serverCard: { publicUrl: `${PUBLIC}/` }, apiKeys: [{ principal: 'ci', key: KEY, scopes: [] }] })
  t.equal((await fetch(`${base}/tools`)).status, 401, 'the MCP routes need a key')
  const res = await fetch(`${base}/mcp/server-card`, { headers: { accept: 'application/mcp-server-card+json' } })
  t.equal(res.status, 200, 'the card does not')
  t.equal(res.headers.get('content-type'), 'application/mcp-server-card+json; charset=utf-8')
  t.equal(res.headers.get('cache-control'), 'public, max-age=3600')
  const card = (await res.json()) as Record<string, unknown>
  t.same(card, {
    $schema: SERVER_CARD_SCHEMA_URL,
    name: 'com.example/notes',
    version: '2.3.4',
    description: 'Keeps notes for a team.',
    title: 'Notes',
    remotes: [
      {
        type: 'streamable-http',
        url: `${PUBLIC}/mcp`,
        headers: [
          {
            name: 'Authorization',
            description: 'An API key of this server, as a bearer token.',
            isRequired: true,
            isSecret: true,
            value: 'Bearer {api_key}',
            variables: { api_key: { description: 'Your API key for this server.', isRequired: true, isSecret: true } }
          }
        ],
        supportedProtocolVersions: [...SUPPORTED_VERSIONS]
      }
    ],
    _meta: { [PURE_HTTP_META]: { url: PUBLIC, openapi: `${PUBLIC}/openapi.json`, supportedProtocolVersions: [...SUPPORTED_VERSIONS] } }
  })
  t.ok(validCard(card), 'valid by the card schema')
  t.notOk(validCard({ ...card, name: 'notes' }), 'the schema has teeth: a name without a namespace')
  t.notOk(validCard({ ...card, $schema: 'https://static.modelcontextprotocol.io/schemas/2026-07-28/server-card.schema.json' }), 'and a dated $schema')

  const etag = res.headers.get('etag')!
  const again = await fetch(`${base}/mcp/server-card`, { headers: { 'if-none-match': etag } })
  t.same([again.status, await again.text()], [304, ''], 'revalidated by its ETag')
  mcp.tool({ name: 'later' }, () => ({ content: [] }))
  const after = await fetch(`${base}/mcp/server-card`)
  t.same([after.headers.get('etag'), await after.json()], [etag, card], 'a tool added changes nothing: the card lists no primitives')
})

t.test('public with OAuth on: no token needed', async (t) => {
  const oauth = { issuer: 'https://auth.example.test', audience: PUBLIC, jwksUrl: 'https://auth.example.test/jwks.json' }
  const { base } = await listen(t, { serverCard: true, oauth })
  const refused = await fetch(`${base}/discover`)
  t.equal(refused.status, 401)
  t.match(refused.headers.get('www-authenticate'), /^Bearer /)
  const card = (await (await fetch(`${base}/mcp/server-card`)).json()) as any
  t.notOk('headers' in card.remotes[0], 'no header to ask for: an OAuth client learns from the challenge')
  t.equal((await fetch(`${base}/.well-known/ai-catalog.json`)).status, 200)
})

t.test('any origin may read it; preflights are answered; the Host check stays', async (t) => {
  // With no allowedOrigins on loopback, only loopback origins pass the Origin check elsewhere.
  const { base } = await listen(t, { serverCard: true })
  const foreign = { origin: 'https://elsewhere.example' }
  t.equal((await fetch(`${base}/tools`, { headers: foreign })).status, 403, 'a foreign origin is refused on the MCP routes')
  const res = await fetch(`${base}/mcp/server-card`, { headers: foreign })
  t.equal(res.status, 200)
  t.equal(res.headers.get('access-control-allow-origin'), '*')
  t.equal(res.headers.get('access-control-expose-headers'), 'ETag')
  const pre = await fetch(`${base}/mcp/server-card`, { method: 'OPTIONS', headers: { ...foreign, 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' } })
  t.equal(pre.status, 204)
  t.equal(pre.headers.get('access-control-allow-origin'), '*')
  t.equal(pre.headers.get('access-control-allow-methods'), 'GET')
  t.equal(pre.headers.get('access-control-allow-headers'), 'Content-Type, If-None-Match')
  const rebound = await new Promise<number>((resolve, reject) =>
    get(`${base}/mcp/server-card`, { headers: { host: 'attacker.example' } }, (res) => resolve(res.resume().statusCode!)).on('error', reject)
  )
  t.equal(rebound, 403, 'a rebound Host is still refused')
  t.equal((await fetch(`${base}/mcp/server-card`, { method: 'POST' })).status, 405)
})

t.test('rate limits count the card, per address', async (t) => {
  const { base } = await listen(t, { serverCard: true, rateLimit: { max: 2, timeWindowMs: 60_000 } })
  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await fetch(`${base}/mcp/server-card`)).status)
  t.same(statuses, [200, 200, 429])
})

t.test('without a public URL: the endpoint is a variable, the catalogue carries the card inline', async (t) => {
  const mcp = new McpServer({ name: 'mcp-pure-http-demo', version: '0.1.0' })
  const { base } = await listen(t, { mcp, serverCard: true })
  const card = (await (await fetch(`${base}/mcp/server-card`)).json()) as any
  t.equal(card.name, 'local/mcp-pure-http-demo', 'a name without a namespace gets one')
  t.equal(card.description, 'mcp-pure-http-demo', 'no description nor title: the name')
  t.notOk('title' in card)
  t.match(card.remotes, [{ url: '{origin}/mcp', variables: { origin: { isRequired: true } } }])
  t.ok(validCard(card))
  const res = await fetch(`${base}/.well-known/ai-catalog.json`)
  t.equal(res.headers.get('content-type'), 'application/ai-catalog+json; charset=utf-8')
  t.equal(res.headers.get('access-control-allow-origin'), '*')
  const catalog = await res.json()
  t.same(catalog, { specVersion: '1.0', entries: [{ identifier: 'urn:air:local:mcp:mcp-pure-http-demo', type: 'application/mcp-server-card+json', data: card }] })
  t.ok(validCatalog(catalog))
  const cached = await fetch(`${base}/.well-known/ai-catalog.json`, { headers: { 'if-none-match': res.headers.get('etag')! } })
  t.equal(cached.status, 304)
  const pre = await fetch(`${base}/.well-known/ai-catalog.json`, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET' } })
  t.same([pre.status, pre.headers.get('access-control-allow-origin'), pre.headers.get('access-control-allow-headers')], [204, '*', 'Content-Type, If-None-Match'])
})

t.test('one card per mount, each listed in the AI Catalog under its own identifier', async (t) => {
  const { app, base } = await listen(t, { serverCard: { publicUrl: PUBLIC }, prefix: '/notes', jsonRpc: { path: '/rpc' } })
  t.equal((await fetch(`${base}/notes/rpc/server-card`)).status, 200, "after the Streamable HTTP endpoint's own path")
  const catalog = (await (await fetch(`${base}/.well-known/ai-catalog.json`)).json()) as any
  t.same(catalog.entries.map((e: { identifier: string; url: string }) => [e.identifier, e.url]), [['urn:air:mcp.example.com:mcp:notes', `${PUBLIC}/notes/rpc/server-card`]])
  void app
})

t.test('several mounts on one app; a REST-only mount; a plugin on an app of its own', async (t) => {
  const app = await buildServer({ logger: false, mcp: catalogue(), serverCard: { publicUrl: PUBLIC }, prefix: '/a' })
  await app.register(mcpPlugin, { prefix: '/b/c', mcp: catalogue(), serverCard: { publicUrl: PUBLIC }, jsonRpc: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const rest = (await (await fetch(`${base}/b/c/server-card`)).json()) as any
  t.same(rest.remotes, [], 'no Streamable HTTP endpoint: no remote')
  t.equal(rest._meta[PURE_HTTP_META].url, `${PUBLIC}/b/c`, 'the REST face stays in _meta')
  const catalog = (await (await fetch(`${base}/.well-known/ai-catalog.json`)).json()) as any
  t.same(catalog.entries.map((e: { identifier: string }) => e.identifier), ['urn:air:mcp.example.com:mcp:a', 'urn:air:mcp.example.com:mcp:b.c'], 'one upstream name, two identifiers')

  const bare = Fastify()
  await bare.register(mcpPlugin, { mcp: catalogue(), serverCard: true })
  t.teardown(() => bare.close())
  t.equal((await bare.inject({ url: '/mcp/server-card' })).statusCode, 200, 'without buildServer: the card, no catalogue')
  t.equal((await bare.inject({ url: '/.well-known/ai-catalog.json' })).statusCode, 404)
})

t.test('the OpenAPI document lists the card as an experimental meta operation', async (t) => {
  const { base } = await listen(t, { serverCard: true })
  const doc = (await (await fetch(`${base}/openapi.json`)).json()) as any
  const op = doc.paths['/mcp/server-card'].get
  t.equal(op.operationId, 'serverCard')
  t.same(op.tags, ['meta'])
  t.same(op.security, [])
  t.match(op.description, /^Experimental/)
  t.ok(op.responses['200'].content['application/mcp-server-card+json'].schema)
  t.notOk(doc.paths['/.well-known/ai-catalog.json'], 'the catalogue is the host\'s, outside the mount\'s document')
})

t.test('options: fields of their own, checked at start', async (t) => {
  const mcp = new McpServer({ name: 'n', version: '1', title: 'T'.repeat(120), description: 'd'.repeat(150) })
  const site = { prefix: '', jsonRpcPath: '/mcp' }
  const derived = buildServerCard(mcp, {}, site)
  t.equal(derived.description, `${'d'.repeat(99)}…`, 'a long description is cut to the 100 the schema allows')
  t.equal(derived.title, `${'T'.repeat(99)}…`)
  t.equal(buildServerCard(new McpServer({ name: 'n', version: '1', title: 'Only a title' }), {}, site).description, 'Only a title')
  const own = buildServerCard(
    mcp,
    {
      name: 'com.example/own',
      title: 'Own',
      description: 'Own words.',
      websiteUrl: 'https://example.com',
      repository: { url: 'https://example.com/src', source: 'github' },
      icons: [{ src: 'https://example.com/i.png', mimeType: 'image/png' }],
      _meta: { 'com.example/x': 1 },
      publicUrl: 'http://localhost:8080'
    },
    site
  )
  t.match(own, { name: 'com.example/own', title: 'Own', description: 'Own words.', websiteUrl: 'https://example.com', repository: { source: 'github' }, icons: [{ mimeType: 'image/png' }], _meta: { 'com.example/x': 1 } })
  t.equal(own.remotes![0]!.url, 'http://localhost:8080/mcp')
  t.equal(buildServerCard(new McpServer({ name: 'n', version: '1' }), { publicUrl: 'http://127.0.0.1:3000' }, site).name, 'local/n', 'an address is no namespace')
  t.equal(buildServerCard(new McpServer({ name: 'my server!', version: '1' }), { publicUrl: 'https://mcp.example.org' }, site).name, 'org.example.mcp/my-server-', 'the host reversed; the name made safe')
  t.throws(() => buildServerCard(mcp, { name: 'no-namespace' }, site), new ConfigurationError('serverCard: name must match pattern "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$"'))
  for (const url of ['not a url', 'ftp://example.com', 'https://example.com/?q=1', 'https://example.com/#x']) {
    t.throws(() => buildServerCard(mcp, { publicUrl: url }, site), ConfigurationError, url)
  }
  await t.rejects(buildServer({ logger: false, mcp, serverCard: { description: '' } }), ConfigurationError, 'a bad option stops the start')
  t.same(
    aiCatalog([{ card: derived, path: '/mcp/server-card', prefix: '', publicUrl: undefined }]).entries[0]!.identifier,
    'urn:air:local:mcp:n'
  )
})

t.test('configuration: MCP_SERVER_CARD and MCP_PUBLIC_URL', async (t) => {
  t.same(serverCardFromConfig(loadConfig({ MCP_SERVER_CARD: 'true' })), {})
  t.same(serverCardFromConfig(loadConfig({ MCP_SERVER_CARD: 'true', MCP_PUBLIC_URL: PUBLIC })), { publicUrl: PUBLIC })
  t.throws(() => loadConfig({ MCP_SERVER_CARD: 'yes' }), ConfigurationError)
  t.throws(() => loadConfig({ MCP_PUBLIC_URL: 'mcp.example.com' }), ConfigurationError)
})
