import t from 'tap'
import { METHODS, type MethodEntry } from '../../src/methods.js'
import { build, call } from '../helpers/helper.js'
import { pureHeaders, rpc } from '../helpers/rpc.js'

type Era = 'modern' | 'legacy'
const ERAS: Era[] = ['modern', 'legacy']
const entries = Object.entries(METHODS as Record<string, MethodEntry>)

// Routes of the transport itself, not of an MCP method: notifications and server-to-client requests
// (SEP-1612), webhooks, the document and the OAuth metadata.
const TRANSPORT = new Set(['getNotifications', 'postNotifications', 'takeRequest', 'answerRequest', 'openapi'])

t.test('each era has the methods its revision defines (the ClientRequest unions), and the Tasks extension', async (t) => {
  const of = (era: Era) => entries.filter(([, e]) => e.eras.includes(era)).map(([name]) => name).sort()
  const tasks = ['tasks/cancel', 'tasks/get', 'tasks/update']
  // schema/2026-07-28/schema.ts ClientRequest.
  const modern = ['completion/complete', 'prompts/get', 'prompts/list', 'resources/list', 'resources/read', 'resources/templates/list', 'server/discover', 'subscriptions/listen', 'tools/call', 'tools/list']
  // schema/2025-11-25/schema.ts ClientRequest (2025-06-18's, and the experimental tasks/get, result, list, cancel, not served: docs/jsonrpc.md).
  const legacy = ['completion/complete', 'initialize', 'logging/setLevel', 'ping', 'prompts/get', 'prompts/list', 'resources/list', 'resources/read', 'resources/subscribe', 'resources/templates/list', 'resources/unsubscribe', 'tools/call', 'tools/list']
  t.same(of('modern'), [...modern, ...tasks].sort())
  t.same(of('legacy'), [...legacy, ...tasks].sort())
})

t.test('/mcp: every method of the table is -32601 in an era that does not define it, and served in one that does', async (t) => {
  const { app } = await build(t)
  for (const [name, entry] of entries) {
    for (const era of ERAS) {
      // Empty params: served, or refused by the method's own params schema (-32602), never unknown.
      const res = await rpc(app, name, {}, { era, id: 7 })
      if (entry.eras.includes(era)) {
        t.not(res.body.error?.code, -32601, `${name} is served in the ${era} era`)
      } else {
        t.equal(res.status, era === 'modern' ? 404 : 200, `${name} (${era}): status`)
        t.same(res.body, { jsonrpc: '2.0', id: 7, error: { code: -32601, message: `Method not found: ${name}` } }, `${name} is -32601 in the ${era} era`)
      }
    }
  }
  t.equal((await rpc(app, 'nope/nope')).body.error.code, -32601, 'a name outside the table')
  t.equal((await rpc(app, 'toString')).body.error.code, -32601, 'an inherited property is not a method')
})

t.test('Pure HTTP: every REST route is served in every era, except that a method 2026-07-28 removed is 404 -32601 there, saying what instead', async (t) => {
  const { app } = await build(t)
  let removed = 0
  for (const [name, entry] of entries) {
    for (const route of entry.rest) {
      const url = route.url.replace(/:[a-zA-Z]+/g, 'x')
      for (const era of ERAS) {
        const res = await call(app, { method: route.method, url, headers: pureHeaders(era), ...(route.method === 'POST' ? { payload: '{}' } : {}) })
        t.not(res.status, 405, `${route.method} ${url} (${name}, ${era})`)
        if (era === 'modern' && !entry.eras.includes('modern')) {
          removed++
          t.equal(res.status, 404, `${route.method} ${url} (${name}) is not there in 2026-07-28`)
          t.same(res.body, { code: -32601, message: `Method not found: ${name} is not part of MCP 2026-07-28: ${entry.instead}` }, `${name}: what instead`)
          t.ok(entry.instead, `${name} says what a 2026-07-28 client does instead`)
        } else {
          t.not(res.status === 404 && res.body?.code === -32601, true, `${route.method} ${url} (${name}, ${era}) is a route`)
        }
      }
    }
  }
  t.equal(removed, 5, 'initialize, ping, logging/setLevel, resources/subscribe and resources/unsubscribe')
})

t.test('POST /initialize without Mcp-Protocol-Version is the 2025 handshake; with a 2026-07-28 header it is not there', async (t) => {
  const { app } = await build(t)
  const body = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }
  const bare = await call(app, { method: 'POST', url: '/initialize', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) })
  t.equal(bare.status, 200)
  t.equal(bare.body.protocolVersion, '2025-11-25')
  const modern = await call(app, { method: 'POST', url: '/initialize', headers: pureHeaders('modern'), payload: JSON.stringify(body) })
  t.same([modern.status, modern.body.code], [404, -32601])
  t.match(modern.body.message, /GET \/discover says what the server offers/)
})

t.test('the version a removed method is judged by: the header, else the _meta envelope (body, then Mcp-Meta), else the default', async (t) => {
  const { app } = await build(t)
  const ping = (headers: Record<string, string>) => call(app, { url: '/ping', headers })
  const envelope = (v: string) => JSON.stringify({ 'io.modelcontextprotocol/protocolVersion': v })
  t.equal((await ping({ 'mcp-meta': envelope('2025-11-25') })).status, 202, 'a 2025 version in Mcp-Meta')
  t.equal((await ping({ 'mcp-meta': envelope('2026-07-28') })).status, 404)
  t.equal((await ping({ 'mcp-meta': 'not json' })).status, 404, 'an unreadable Mcp-Meta states no version: the default')
  t.equal((await ping({ 'mcp-meta': envelope('1999-01-01') })).status, 404, 'nor does an unknown one')
  const level = (body: unknown, headers: Record<string, string> = {}) =>
    call(app, { method: 'POST', url: '/logLevel', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) })
  t.equal((await level({ level: 'info', _meta: JSON.parse(envelope('2025-06-18')) })).status, 202, 'a 2025 version in the body')
  t.equal((await level({ level: 'info', _meta: { trace: 1 } }, { 'mcp-meta': envelope('2025-06-18') })).status, 400, 'the header too: both, refused as always')
  t.equal((await level({ level: 'info' }, { 'mcp-protocol-version': '2025-11-25', 'mcp-meta': envelope('2026-07-28') })).status, 400, 'a header that the envelope contradicts: -32020 as always')
})

t.test('the OpenAPI document marks the operations of removed methods deprecated, naming the versions they serve', async (t) => {
  const { app } = await build(t)
  const doc = (await call(app, { method: 'GET', url: '/openapi.json' })).body
  const deprecated: string[] = []
  for (const item of Object.values(doc.paths as Record<string, Record<string, { operationId: string; deprecated?: boolean; description?: string }>>)) {
    for (const op of Object.values(item)) {
      if (op.deprecated !== true) continue
      deprecated.push(op.operationId)
      t.match(op.description, /^(.+ )?Only for clients of 2025-11-25 and 2025-06-18 \(Mcp-Protocol-Version\): MCP 2026-07-28 removed /, op.operationId)
    }
  }
  t.same(deprecated.sort(), ['initialize', 'ping', 'setLogLevel', 'subscribeResource', 'unsubscribeResource'])
})

t.test('the OpenAPI document has the operations of the table, and no MCP method the table lacks', async (t) => {
  const { app } = await build(t)
  const doc = (await call(app, { url: '/openapi.json' })).body
  const operations = new Map<string, { method: string; path: string; summary: string }>()
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { operationId: string; summary: string }>>)) {
    for (const [method, op] of Object.entries(item)) operations.set(op.operationId, { method: method.toUpperCase(), path, summary: op.summary })
  }
  for (const [name, entry] of entries) {
    for (const route of entry.rest) {
      const op = operations.get(route.operationId)
      t.same(op && [op.method, op.path], [route.method, route.url.replace(/:([a-zA-Z]+)/g, '{$1}')], `${route.operationId} (${name})`)
      t.ok(op?.summary.startsWith(name), `${route.operationId}'s summary names ${name}`)
      operations.delete(route.operationId)
    }
  }
  const rest = [...operations.keys()].filter((id) => !TRANSPORT.has(id) && !id.startsWith('callTool_'))
  t.same(rest, [], 'every other operation is a tool of its own or the transport\'s')
})

t.test('the table guards its own use: a REST route it does not have, a context asked of a method that takes none', async (t) => {
  const { NO_CONTEXT, restRoute } = await import('../../src/http/rest-route.js')
  t.throws(() => restRoute('noSuchOperation'), /No REST route noSuchOperation in the method table/)
  t.throws(() => NO_CONTEXT.modern.context(), /This method takes no context/)
  t.throws(() => NO_CONTEXT.legacy.context(), /This method takes no context/)
})

t.test('a capability not offered (McpServer.offer): its methods are -32601 on both faces, in every era; discover and initialize leave it out', async (t) => {
  const { app, mcp } = await build(t)
  mcp.offer({})
  for (const [name, entry] of entries) {
    for (const era of ERAS.filter((e) => entry.eras.includes(e))) {
      const res = await rpc(app, name, {}, { era, id: 3 })
      if (entry.capability === undefined) t.not(res.body.error?.code, -32601, `${name} (${era}) belongs to no capability: served`)
      else t.same([res.status, res.body.error], [era === 'modern' ? 404 : 200, { code: -32601, message: 'Method not found' }], `${name} (${era}): not offered`)
    }
    for (const route of entry.rest) {
      const url = route.url.replace(/:[a-zA-Z]+/g, 'x')
      const res = await call(app, { method: route.method, url, headers: pureHeaders('legacy'), ...(route.method === 'POST' ? { payload: '{}' } : {}) })
      const refused = res.status === 404 && res.body?.code === -32601
      t.equal(refused, entry.capability !== undefined, `${route.method} ${url} (${name}): ${entry.capability === undefined ? 'served' : 'not offered'}`)
    }
  }
  const discovered = (await rpc(app, 'server/discover')).body.result.capabilities
  t.same(discovered, { extensions: { 'io.modelcontextprotocol/tasks': {} } }, 'discover offers the Tasks extension alone')
  const initialized = (await rpc(app, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy' })).body.result
  t.same(initialized.capabilities, discovered, 'initialize too')

  mcp.offer({ tools: {}, resources: {} })
  t.same(Object.keys(mcp.capabilities()).sort(), ['extensions', 'resources', 'tools'])
  t.same(mcp.capabilities().resources, { listChanged: true }, 'resources without subscribe')
  t.equal((await rpc(app, 'resources/subscribe', { uri: 'demo://readme' }, { era: 'legacy' })).body.error.code, -32601, 'so subscribe is not a method')
  t.equal((await rpc(app, 'resources/list', {}, { era: 'legacy' })).body.error, undefined, 'while the lists are')
  t.same((await rpc(app, 'server/discover')).body.result.capabilities, mcp.capabilities(), 'discover is built again')

  mcp.offer(undefined)
  t.same(mcp.capabilities().resources, { subscribe: true, listChanged: true }, 'undefined: everything again')
  t.equal((await rpc(app, 'resources/subscribe', { uri: 'demo://readme' }, { era: 'legacy' })).body.error, undefined)
})
