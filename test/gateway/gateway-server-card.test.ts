import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { McpServer } from '../../src/core/mcp-server.js'
import { Gateway } from '../../src/gateway/gateway.js'
import { MemoryRelay } from '../../src/gateway/relay.js'
import { SUPPORTED_VERSIONS } from '../../src/protocol.js'
import { AiCatalogSchema, ServerCardSchema } from '../../src/schema/server-card.js'
import { buildServer } from '../../src/server.js'
import { MemoryStore } from '../../src/store/memory.js'
import { EVERYTHING } from '../helpers/gateway-helper.js'
import { start } from '../helpers/gateway-cli-helper.js'

// The gateway's Server Cards (SEP-2127, experimental): one per mount, from what the upstream says
// through us, with the gateway's URLs; the virtual servers' too; the AI Catalog lists them all.

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default
const ajv = new Ajv2020({ strict: false })
addFormats(ajv)
const validCard = ajv.compile(ServerCardSchema)
const validCatalog = ajv.compile(AiCatalogSchema)
const PUBLIC = 'https://gw.example.com'
const KEY = 'card-key-0123456789abcdefghijklmnopqrstuvw'

t.test('one card per mount and per virtual server, public, listed at the root and in the AI Catalog', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-card-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'mcp.json')
  const everything = { command: process.execPath, args: [EVERYTHING, 'stdio'] }
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: { everything, again: everything, hidden: { ...everything, mount: false } },
      virtualServers: { team: { include: ['everything/echo', 'hidden/get-sum'] } }
    })
  )
  const gw = await start(t, ['gateway', '--config', config], { MCP_SERVER_CARD: 'true', MCP_PUBLIC_URL: PUBLIC, MCP_API_KEYS: `ci:${KEY}` })
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${gw.base}${path}`, { headers })
  t.equal((await get('/everything/tools')).status, 401, 'the mounts need a key')

  const res = await get('/everything/mcp/server-card')
  t.equal(res.status, 200, 'their cards do not')
  t.equal(res.headers.get('content-type'), 'application/mcp-server-card+json; charset=utf-8')
  const card = (await res.json()) as any
  t.match(card, {
    name: 'mcp-servers/everything',
    version: '2.0.0',
    title: 'Everything Reference Server',
    description: 'Everything Reference Server',
    remotes: [{ type: 'streamable-http', url: `${PUBLIC}/everything/mcp`, supportedProtocolVersions: [...SUPPORTED_VERSIONS] }]
  }, "the upstream's identity as the gateway serves it, the gateway's URL")
  t.ok(validCard(card))
  const discover = (await (await get('/everything/discover', { authorization: `Bearer ${KEY}` })).json()) as any
  t.same([discover.serverInfo.name, discover.serverInfo.version], [card.name, card.version], 'consistent with server/discover, as the SEP asks')

  const again = (await (await get('/again/mcp/server-card')).json()) as any
  t.same([again.name, again.remotes[0].url], ['mcp-servers/everything', `${PUBLIC}/again/mcp`], 'the same upstream under another mount')
  t.equal((await get('/hidden/mcp/server-card')).status, 404, 'an upstream with no mount has no card')
  const team = (await (await get('/team/mcp/server-card')).json()) as any
  t.match(team, { name: 'com.example.gw/team', version: '0.1.0', remotes: [{ url: `${PUBLIC}/team/mcp` }] }, 'a virtual server: its name under the public host')
  t.ok(validCard(team))

  const root = (await (await get('/', { authorization: `Bearer ${KEY}` })).json()) as any
  t.same(root.servers.map((s: { serverCard?: string }) => s.serverCard), ['/everything/mcp/server-card', '/again/mcp/server-card', undefined])
  t.equal(root.virtualServers[0].serverCard, '/team/mcp/server-card')

  const catalog = (await (await get('/.well-known/ai-catalog.json')).json()) as any
  t.ok(validCatalog(catalog))
  t.same(
    catalog.entries.map((e: { identifier: string; url: string }) => [e.identifier, e.url]),
    [
      ['urn:air:gw.example.com:mcp:everything', `${PUBLIC}/everything/mcp/server-card`],
      ['urn:air:gw.example.com:mcp:again', `${PUBLIC}/again/mcp/server-card`],
      ['urn:air:gw.example.com:mcp:team', `${PUBLIC}/team/mcp/server-card`]
    ],
    'public, every mount once, the virtual server too'
  )
})

t.test('without MCP_SERVER_CARD: no cards, and the root lists none', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-card-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'mcp.json')
  const everything = { command: process.execPath, args: [EVERYTHING, 'stdio'] }
  writeFileSync(config, JSON.stringify({ mcpServers: { everything }, virtualServers: { team: { include: ['everything/echo'] } } }))
  const gw = await start(t, ['gateway', '--config', config])
  t.equal((await fetch(`${gw.base}/everything/mcp/server-card`)).status, 404)
  t.equal((await fetch(`${gw.base}/.well-known/ai-catalog.json`)).status, 404)
  const root = (await (await fetch(`${gw.base}/`)).json()) as any
  t.notOk('serverCard' in root.servers[0])
  t.notOk('serverCard' in root.virtualServers[0])
})

t.test("an upstream's description reaches its card", async (t) => {
  // Our own server as the upstream, over Streamable HTTP: its serverInfo carries a description.
  const upstream = await buildServer({ logger: false, mcp: new McpServer({ name: 'com.example/described', version: '3.0.0', description: 'Described upstream.' }) })
  t.teardown(() => upstream.close())
  await upstream.listen({ host: '127.0.0.1', port: 0 })
  const quiet = { debug() {}, info() {}, warn() {}, error() {} }
  const url = `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}/mcp`
  const gw = await Gateway.start({ name: 'described', spec: { url }, log: quiet, server: {}, relay: new MemoryRelay(), instance: 'card-test' })
  const app = await buildServer({ logger: false, mcp: gw.mcp, store: gw.wrapStore(new MemoryStore()), serverCard: true })
  t.teardown(async () => {
    await app.close()
    await gw.close()
  })
  const card = JSON.parse((await app.inject({ url: '/mcp/server-card' })).payload)
  t.match(card, { name: 'com.example/described', version: '3.0.0', description: 'Described upstream.' })
})
