import t, { type Test } from 'tap'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { buildServer } from '../../src/server.js'
import { call } from '../helpers/helper.js'
import { serveUpstream } from '../helpers/gateway-helper.js'
import { LEGACY, MODERN, pureHeaders, rpc } from '../helpers/rpc.js'

const MIME = 'text/html;profile=mcp-app'
const URI = 'ui://weather/dashboard'
// Markup, quotes and non-ASCII: the page must arrive byte for byte.
const HTML = '<!doctype html><html><body><p id="out" title="a &amp; \'b\'">Météo</p><script>parent.postMessage({}, "*")</script></body></html>'
const UI = { csp: { connectDomains: ['https://api.example.com'], resourceDomains: ['https://*.cdn.example.com'], frameDomains: ['https://player.example.com'] }, permissions: { geolocation: {} }, domain: 'weather.example.com', prefersBorder: false }
const TOOL_META = { 'example.com/owner': 'team-a', ui: { resourceUri: URI, visibility: ['app'] } }

/** Our own server with an MCP App, on a real socket: the gateway's Streamable HTTP upstream. */
async function upstream(t: Test): Promise<string> {
  const mcp = new McpServer({ name: 'weather', version: '1' })
  mcp.uiResource({ uri: URI, name: 'dashboard', title: 'Dashboard', ui: UI }, HTML)
  mcp.tool(
    { name: 'get_weather', input: Type.Object({ city: Type.String() }), _meta: { 'example.com/owner': 'team-a' }, ui: { resourceUri: URI, visibility: ['app'] } },
    ({ city }) => ({ content: [{ type: 'text', text: `Sunny in ${city}` }], structuredContent: { city } })
  )
  const app = await buildServer({ mcp, logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`
}

t.test("an upstream's MCP App passes through the gateway unchanged, on both faces, in both eras", async (t) => {
  const { app } = await serveUpstream(t, { url: await upstream(t) })
  const contents = [{ uri: URI, mimeType: MIME, text: HTML, _meta: { ui: UI } }]
  for (const era of ['legacy', 'modern'] as const) {
    const tools = await call(app, { url: '/tools', headers: pureHeaders(era) })
    t.same(tools.body.tools.find((x: { name: string }) => x.name === 'get_weather')._meta, TOOL_META, `${era}: the tool's _meta, ui and all`)
    const listed = await call(app, { url: '/resources', headers: pureHeaders(era) })
    t.same(listed.body.resources, [{ uri: URI, name: 'dashboard', title: 'Dashboard', mimeType: MIME, _meta: { ui: UI } }])
    const read = await call(app, { url: `/resources/${encodeURIComponent(URI)}`, headers: pureHeaders(era) })
    t.same([read.status, read.body.contents], [200, contents], `${era}: REST read`)

    const rpcTools = await rpc(app, 'tools/list', {}, { era })
    t.same(rpcTools.body.result.tools.find((x: { name: string }) => x.name === 'get_weather')._meta, TOOL_META, `${era}: /mcp tools/list`)
    const rpcRead = await rpc(app, 'resources/read', { uri: URI }, { era })
    t.same(rpcRead.body.result.contents, contents, `${era}: /mcp resources/read`)
    const called = await rpc(app, 'tools/call', { name: 'get_weather', arguments: { city: 'Oslo' } }, { era })
    t.same(called.body.result.structuredContent, { city: 'Oslo' })
  }
  const discover = await call(app, { url: '/discover', headers: { 'mcp-protocol-version': MODERN } })
  t.same(discover.body.capabilities.extensions['io.modelcontextprotocol/ui'], { mimeTypes: [MIME] }, 'the gateway declares the extension: it serves a view')
  const init = await call(app, {
    method: 'POST',
    url: '/initialize',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': LEGACY },
    payload: JSON.stringify({ protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'c', version: '1' } })
  })
  t.same(init.body.capabilities.extensions['io.modelcontextprotocol/ui'], { mimeTypes: [MIME] })
  const doc = await call(app, { url: '/openapi.json' })
  t.same(doc.body.paths['/tools/get_weather/calls'].post['x-mcp-ui'], { resourceUri: URI, visibility: ['app'], read: `/resources/${encodeURIComponent(URI)}` })
})
