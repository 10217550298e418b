import t, { type Test } from 'tap'
import { Type } from '@sinclair/typebox'
import { request } from 'undici'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpServer } from '../../src/core/mcp-server.js'
import { ConfigurationError } from '../../src/errors.js'
import { buildServer } from '../../src/server.js'
import { encodeJsonHeader } from '../../src/headers.js'
import { envelope, MODERN } from '../helpers/rpc.js'

const MIME = 'text/html;profile=mcp-app'
const URI = 'ui://weather/dashboard'
const HTML = '<!doctype html><html><body><p id="out">waiting</p></body></html>'
const CSP = { connectDomains: ['https://api.example.com', 'wss://live.example.com:8443'], resourceDomains: ['https://*.cdn.example.com'] }

/** A server with one view and a tool linked to it (with its own `_meta` besides). */
function appServer(): McpServer {
  const mcp = new McpServer({ name: 'apps', version: '1' })
  mcp.uiResource({ uri: URI, name: 'dashboard', description: 'The weather view', ui: { csp: CSP, prefersBorder: true } }, HTML)
  mcp.tool(
    {
      name: 'get_weather',
      input: Type.Object({ city: Type.String() }),
      _meta: { 'example.com/owner': 'team-a', ui: { extra: 1 } },
      ui: { resourceUri: URI, visibility: ['model', 'app'] }
    },
    ({ city }) => ({ content: [{ type: 'text', text: `Sunny in ${city}` }], structuredContent: { city, sky: 'sunny' } })
  )
  mcp.tool({ name: 'plain' }, () => 'no view')
  return mcp
}

async function listen(t: Test, mcp: McpServer): Promise<string> {
  const app = await buildServer({ mcp, logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

const TOOL_META = { 'example.com/owner': 'team-a', ui: { extra: 1, resourceUri: URI, visibility: ['model', 'app'] } }
const CONTENT_META = { ui: { csp: CSP, prefersBorder: true } }

t.test('registration: the view and the link are checked, with errors that say what to fix', async (t) => {
  const mcp = new McpServer({ name: 'x', version: '1' })
  const bad = (fn: () => unknown, message: RegExp) => t.throws(fn, { name: ConfigurationError.name, message })
  bad(() => mcp.uiResource({ uri: 'https://x/view', name: 'v' }, HTML), /must start with "ui:\/\/"/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { connectDomains: ["'unsafe-eval'"] } } }, HTML), /connectDomains has "'unsafe-eval'", not an origin/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { resourceDomains: ['https://a.com; script-src *'] } } }, HTML), /not an origin/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { connectDomains: ['*'] } } }, HTML), /not an origin/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { resourceDomains: ['https://a.com/path'] } } }, HTML), /not an origin/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { scriptDomains: [] } as never } }, HTML), /ui\.csp\.scriptDomains is not one of/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { permissions: { usb: {} } as never } }, HTML), /ui\.permissions\.usb is not one of/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { prefersBorder: 'yes' as never } }, HTML), /prefersBorder must be a boolean/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { border: true } as never }, HTML), /ui\.border is not a SEP-1865 field/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', mimeType: 'text/html' } as never, HTML), /mimeType is always text\/html;profile=mcp-app/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: 'strict' as never }, HTML), /ui must be an object/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: [] as never } }, HTML), /ui\.csp must be an object/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { connectDomains: 'https://a.com' as never } } }, HTML), /connectDomains must be an array of origins/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { connectDomains: [42 as never] } } }, HTML), /has 42, not an origin/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { csp: { connectDomains: [`https://${'a'.repeat(300)}.com`] } } }, HTML), /not an origin/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { permissions: true as never } }, HTML), /ui\.permissions must be an object/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { permissions: { camera: true as never } } }, HTML), /ui\.permissions\.camera must be \{\}/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { domain: 'a b' } }, HTML), /ui\.domain must be a host name/)
  bad(() => mcp.uiResource({ uri: 'ui://v', name: 'v', ui: { domain: 7 as never } }, HTML), /ui\.domain must be a host name/)
  bad(() => mcp.tool({ name: 't', ui: { resourceUri: 'ui://missing' } }, () => ''), /view "ui:\/\/missing" is not registered; register the view \(mcp\.uiResource\) before the tool/)
  bad(() => mcp.tool({ name: 't', ui: { resourceUri: 'demo://readme' } }, () => ''), /must start with "ui:\/\/"/)
  mcp.uiResource({ uri: 'ui://v', name: 'v' }, HTML)
  bad(() => mcp.tool({ name: 't', ui: { resourceUri: 'ui://v', visibility: [] } }, () => ''), /visibility must be a non-empty array/)
  bad(() => mcp.tool({ name: 't', ui: { resourceUri: 'ui://v', visibility: ['agent'] as never } }, () => ''), /visibility/)
  bad(() => mcp.tool({ name: 't', ui: { resourceUri: 'ui://v', visibility: ['app', 'app'] } }, () => ''), /visibility/)
  bad(() => mcp.tool({ name: 't', ui: { resourceUri: 'ui://v', visibility: 'app' as never } }, () => ''), /visibility/)
  bad(() => mcp.tool({ name: 't', ui: 'ui://v' as never }, () => ''), /ui must be an object/)
  t.equal(mcp.tools.size, 0, 'nothing half-registered')
  mcp.tool({ name: 't', ui: { resourceUri: 'ui://v' } }, () => '')
  t.same(mcp.tools.get('t')!.definition._meta, { ui: { resourceUri: 'ui://v' } })
  // The deprecated flat key and a non-object `ui` in _meta are the author's own: kept, or replaced by the link.
  mcp.tool({ name: 't3', _meta: { 'ui/resourceUri': 'ui://v', ui: 'old' }, ui: { resourceUri: 'ui://v' } }, () => '')
  t.same(mcp.tools.get('t3')!.definition._meta, { 'ui/resourceUri': 'ui://v', ui: { resourceUri: 'ui://v' } })
  mcp.uiResource({ uri: 'ui://full', name: 'full', ui: { domain: 'views.example.com', csp: { baseUriDomains: ['https://cdn.example.com'] } } }, HTML)
  t.same(mcp.resources.get('ui://full')!.definition._meta, { ui: { domain: 'views.example.com', csp: { baseUriDomains: ['https://cdn.example.com'] } } })
  // A view served by a template is a registered view too.
  mcp.resourceTemplate({ uriTemplate: 'ui://views/{id}', name: 'views', mimeType: MIME }, () => HTML)
  mcp.tool({ name: 't2', ui: { resourceUri: 'ui://views/7' } }, () => '')
})

t.test('the capability names the extension while a view is registered', async (t) => {
  const mcp = new McpServer({ name: 'x', version: '1' })
  const ext = () => (JSON.parse(mcp.discover('modern').body) as { capabilities: { extensions: Record<string, unknown> } }).capabilities.extensions
  t.notOk('io.modelcontextprotocol/ui' in ext())
  const view = mcp.uiResource({ uri: URI, name: 'v' }, HTML)
  t.same(ext()['io.modelcontextprotocol/ui'], { mimeTypes: [MIME] })
  view.remove()
  t.notOk('io.modelcontextprotocol/ui' in ext())
  const template = mcp.resourceTemplate({ uriTemplate: 'ui://views/{id}', name: 'views', mimeType: MIME }, () => HTML)
  t.same(ext()['io.modelcontextprotocol/ui'], { mimeTypes: [MIME] }, 'a template of views counts')
  template.remove()
  t.notOk('io.modelcontextprotocol/ui' in ext())
  // A gateway offers what its upstream declares: the extension too, views listed or not.
  mcp.offer({ tools: {}, resources: {}, extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [MIME] } } })
  t.same(ext()['io.modelcontextprotocol/ui'], { mimeTypes: [MIME] })
  mcp.offer({ tools: {}, extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [MIME] } } })
  t.notOk('io.modelcontextprotocol/ui' in ext(), 'no resources offered: no view can be read')
  mcp.offer({ tools: {}, resources: {} })
  t.notOk('io.modelcontextprotocol/ui' in ext())
  mcp.offer(undefined)
  t.notOk('io.modelcontextprotocol/ui' in ext(), 'everything offered again, but no view')
})

t.test('REST on a real socket, in both eras: tools list the link, the view reads as mcp-app HTML', async (t) => {
  const base = await listen(t, appServer())
  for (const version of ['2025-06-18', '2025-11-25', MODERN]) {
    const headers = { 'mcp-protocol-version': version }
    const tools = (await (await request(`${base}/tools`, { headers })).body.json()) as { tools: { name: string; _meta?: unknown }[] }
    t.same(tools.tools.find((x) => x.name === 'get_weather')!._meta, TOOL_META, `${version}: tool _meta.ui, the rest of _meta kept`)
    t.notOk('_meta' in tools.tools.find((x) => x.name === 'plain')!)
    const resources = (await (await request(`${base}/resources`, { headers })).body.json()) as { resources: unknown[] }
    t.same(resources.resources, [{ uri: URI, name: 'dashboard', description: 'The weather view', mimeType: MIME, _meta: CONTENT_META }])
    const read = await request(`${base}/resources/${encodeURIComponent(URI)}`, { headers })
    t.equal(read.statusCode, 200)
    const body = (await read.body.json()) as { contents: unknown[] }
    t.same(body.contents, [{ uri: URI, mimeType: MIME, text: HTML, _meta: CONTENT_META }], `${version}: resources/read`)
    const init = version === MODERN
      ? ((await (await request(`${base}/discover`, { headers })).body.json()) as { capabilities: { extensions: Record<string, unknown> } })
      : ((await (await request(`${base}/initialize`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ protocolVersion: version, capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [MIME] } } }, clientInfo: { name: 'c', version: '1' } })
        })).body.json()) as { capabilities: { extensions: Record<string, unknown> } })
    t.same(init.capabilities.extensions['io.modelcontextprotocol/ui'], { mimeTypes: [MIME] }, `${version}: capability`)
  }
  const call = await request(`${base}/tools/get_weather/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-meta': encodeJsonHeader(envelope({ extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [MIME] } } })) },
    body: JSON.stringify({ arguments: { city: 'Oslo' } })
  })
  t.match(await call.body.json(), { content: [{ text: 'Sunny in Oslo' }], structuredContent: { city: 'Oslo', sky: 'sunny' } })
})

t.test('/mcp on a real socket: 2026-07-28 by plain POSTs, 2025-era through the official SDK client', async (t) => {
  const base = await listen(t, appServer())
  const post = async (method: string, params: Record<string, unknown>) => {
    const res = await request(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(typeof params.uri === 'string' ? { 'mcp-name': params.uri } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: envelope() } })
    })
    return ((await res.body.json()) as { result: Record<string, any> }).result
  }
  t.same((await post('tools/list', {})).tools.find((x: { name: string }) => x.name === 'get_weather')._meta, TOOL_META)
  t.same((await post('resources/read', { uri: URI })).contents, [{ uri: URI, mimeType: MIME, text: HTML, _meta: CONTENT_META }])

  const client = new Client({ name: 'sdk', version: '1' }, { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [MIME] } } } as never })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
  t.teardown(() => client.close())
  t.same((client.getServerCapabilities() as { extensions?: Record<string, unknown> }).extensions?.['io.modelcontextprotocol/ui'], { mimeTypes: [MIME] })
  t.same((await client.listTools()).tools.find((x) => x.name === 'get_weather')!._meta, TOOL_META)
  t.same((await client.readResource({ uri: URI })).contents, [{ uri: URI, mimeType: MIME, text: HTML, _meta: CONTENT_META }])
  t.same((await client.listResources()).resources.find((r) => r.uri === URI)?._meta, CONTENT_META)
})

t.test('a handler may make the page per read, bytes or text, sync or async', async (t) => {
  const mcp = new McpServer({ name: 'x', version: '1' })
  mcp.uiResource({ uri: 'ui://a', name: 'a' }, async (uri) => `<p>${uri}</p>`)
  mcp.uiResource({ uri: 'ui://b', name: 'b', ui: { permissions: { clipboardWrite: {} } } }, () => new TextEncoder().encode('<p>b</p>'))
  mcp.uiResource({ uri: 'ui://c', name: 'c', _meta: { 'example.com/k': 1 } }, (uri) => ({ contents: [{ uri, mimeType: MIME, text: '<p>as given</p>' }] }))
  mcp.uiResource({ uri: 'ui://gone', name: 'gone' }, () => undefined)
  const base = await listen(t, mcp)
  const listed = ((await (await request(`${base}/resources`)).body.json()) as { resources: { uri: string; _meta?: unknown }[] }).resources
  t.same(listed.find((r) => r.uri === 'ui://c')!._meta, { 'example.com/k': 1 }, "the view's own _meta, no ui when none declared")
  const read = async (uri: string) => ((await (await request(`${base}/resources/${encodeURIComponent(uri)}`)).body.json()) as { contents: unknown[] }).contents
  t.same(await read('ui://a'), [{ uri: 'ui://a', mimeType: MIME, text: '<p>ui://a</p>' }], 'no _meta.ui when nothing was declared')
  t.same(await read('ui://c'), [{ uri: 'ui://c', mimeType: MIME, text: '<p>as given</p>' }], 'whole contents, sent as they are')
  t.equal((await request(`${base}/resources/${encodeURIComponent('ui://gone')}`)).statusCode, 404)
  t.same(await read('ui://b'), [{ uri: 'ui://b', mimeType: MIME, blob: Buffer.from('<p>b</p>').toString('base64'), _meta: { ui: { permissions: { clipboardWrite: {} } } } }])
})

t.test('OpenAPI: x-mcp-ui only for a _meta.ui that names a ui:// view', async (t) => {
  const mcp = appServer()
  // As a gateway's upstream may send them: _meta.ui set by hand, unchecked.
  mcp.tool({ name: 'elsewhere', _meta: { ui: { resourceUri: 'https://example.com/view' } } }, () => '')
  mcp.tool({ name: 'odd', _meta: { ui: { resourceUri: 7 } } }, () => '')
  mcp.tool({ name: 'hand', _meta: { ui: { resourceUri: 'ui://weather/dashboard' } } }, () => '')
  const app = await buildServer({ mcp, logger: false })
  t.teardown(() => app.close())
  const doc = JSON.parse((await app.inject({ url: '/openapi.json' })).payload)
  const ui = (name: string) => doc.paths[`/tools/${name}/calls`].post['x-mcp-ui']
  t.same(ui('get_weather'), { resourceUri: URI, visibility: ['model', 'app'], read: '/resources/ui%3A%2F%2Fweather%2Fdashboard' })
  t.same(ui('hand'), { resourceUri: URI, read: '/resources/ui%3A%2F%2Fweather%2Fdashboard' })
  t.same([ui('elsewhere'), ui('odd'), ui('plain')], [undefined, undefined, undefined])
})
