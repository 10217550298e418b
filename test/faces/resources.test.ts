import t from 'tap'
import { McpServer } from '../../src/core/mcp-server.js'
import { MemoryStore } from '../../src/store/memory.js'
import { build, call } from '../helpers/helper.js'

const enc = encodeURIComponent

t.test('lists: resources and templates', async (t) => {
  const { app } = await build(t)
  const list = await call(app, { url: '/resources' })
  t.equal(list.status, 200)
  t.same(list.body.resources.map((r: { uri: string }) => r.uri), ['demo://readme', 'demo://roots', 'demo://numbers', 'ui://demo/echo'])
  t.notOk('resolvers' in list.body.resources[1], 'resolvers are not on the wire')
  t.match(list.headers.etag, /^"/)
  const templates = await call(app, { url: '/resources/templates' })
  t.same(templates.body.resourceTemplates.map((r: { uriTemplate: string }) => r.uriTemplate), ['demo://items/{id}'])
  t.notOk('complete' in templates.body.resourceTemplates[0], 'completers are not on the wire')
  const nm = await app.inject({ url: '/resources/templates', headers: { 'if-none-match': templates.headers.etag as string } })
  t.equal(nm.statusCode, 304)
})

t.test('GET /resources/{uri}: exact and templated reads, with ETag', async (t) => {
  const { app } = await build(t)
  const readme = await call(app, { url: `/resources/${enc('demo://readme')}` })
  t.equal(readme.status, 200)
  t.equal(readme.body.contents[0].uri, 'demo://readme')
  t.equal(readme.body.contents[0].mimeType, 'text/markdown')
  t.match(readme.body.contents[0].text, /^# MCP Pure HTTP demo/)
  t.same([readme.body.resultType, readme.body.ttlMs, readme.body.cacheScope], ['complete', 0, 'private'])
  t.match(readme.headers.etag, /^"/)
  const nm = await app.inject({ url: `/resources/${enc('demo://readme')}`, headers: { 'if-none-match': readme.headers.etag as string } })
  t.equal(nm.statusCode, 304)
  t.equal(nm.payload, '')
  const item = await call(app, { url: `/resources/${enc('demo://items/2')}` })
  t.same(JSON.parse(item.body.contents[0].text), { id: 2, name: 'banana' })
  t.not(item.headers.etag, readme.headers.etag)
})

t.test('resource not found: 404 with the code of the era', async (t) => {
  const { app } = await build(t)
  const modern = await call(app, { url: `/resources/${enc('demo://items/9')}` })
  t.same([modern.status, modern.body.code], [404, -32602])
  t.same(modern.body.data, { uri: 'demo://items/9' })
  const legacy = await call(app, { url: `/resources/${enc('demo://nothing')}`, headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.same([legacy.status, legacy.body.code], [404, -32002])
})

t.test('{uri} is one segment decoded exactly once; + is not a space', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  const seen: string[] = []
  mcp.resourceTemplate({ uriTemplate: 'file:///{+path}', name: 'file' }, (uri, { path }) => {
    seen.push(uri)
    return `path=${path}`
  })
  mcp.resource({ uri: 'x:a+b', name: 'plus' }, () => 'plus')
  mcp.resource({ uri: 'x:a b', name: 'space' }, () => 'space')
  mcp.resource({ uri: 'x:%41', name: 'percent' }, () => 'literal percent')
  mcp.resource({ uri: 'bin:one', name: 'bytes', mimeType: 'application/octet-stream' }, () => new Uint8Array([0, 1, 2, 255]))
  const { app } = await build(t, { mcp })
  const file = await call(app, { url: `/resources/${enc('file:///etc/hosts?x=1#y')}` })
  t.equal(file.body.contents[0].text, 'path=etc/hosts?x=1#y')
  t.same(seen, ['file:///etc/hosts?x=1#y'])
  t.equal((await call(app, { url: `/resources/${enc('x:a+b')}` })).body.contents[0].text, 'plus')
  t.equal((await call(app, { url: '/resources/x:a+b' })).body.contents[0].text, 'plus', 'a raw + stays a +')
  t.equal((await call(app, { url: `/resources/${enc('x:a b')}` })).body.contents[0].text, 'space')
  t.equal((await call(app, { url: `/resources/${enc('x:%41')}` })).body.contents[0].text, 'literal percent', 'decoded once, not twice')
  const bytes = await call(app, { url: `/resources/${enc('bin:one')}` })
  t.same(bytes.body.contents, [{ uri: 'bin:one', blob: Buffer.from([0, 1, 2, 255]).toString('base64'), mimeType: 'application/octet-stream' }])
  const long = await call(app, { url: `/resources/${enc('file:///' + 'a/'.repeat(1000))}` })
  t.equal(long.status, 200, 'long URIs fit (maxParamLength)')
})

t.test('POST /resources/{uri} is the body fallback', async (t) => {
  const { app } = await build(t)
  const res = await call(app, { method: 'POST', url: `/resources/${enc('demo://items/1')}`, payload: { _meta: { note: 'x' } } })
  t.equal(res.status, 200)
  t.same(JSON.parse(res.body.contents[0].text), { id: 1, name: 'apple' })
  t.equal(res.headers.etag, undefined, 'a POST answer is not an HTTP-cacheable representation')
  const conditional = await call(app, {
    method: 'POST',
    url: `/resources/${enc('demo://items/1')}`,
    payload: {},
    headers: { 'if-none-match': '*' }
  })
  t.equal(conditional.status, 200, 'no 304 for POST')
  t.equal(conditional.body.resultType, 'complete')
})

t.test('a failing resource handler is a 500 without details', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.resource({ uri: 'x:boom', name: 'boom' }, () => {
    throw new Error('secret path /var/db')
  })
  const { app } = await build(t, { mcp })
  const res = await call(app, { url: `/resources/${enc('x:boom')}` })
  t.same([res.status, res.body], [500, { code: -32603, message: 'Internal error' }])
})

t.test('subscribe and unsubscribe belong to the connection', async (t) => {
  const store = new MemoryStore()
  const { app } = await build(t, { store })
  const sub = await app.inject({ method: 'POST', url: '/resources/subscribe', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { uri: 'demo://readme' } })
  t.equal(sub.statusCode, 202)
  t.equal(sub.payload, '')
  const viaTemplate = await app.inject({ method: 'POST', url: '/resources/subscribe', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { uri: 'demo://items/3' } })
  t.equal(viaTemplate.statusCode, 202)
  t.same(await store.connections.subscriptions('anonymous'), ['demo://readme', 'demo://items/3'])
  const unknown = await call(app, { method: 'POST', url: '/resources/subscribe', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { uri: 'demo://nope' } })
  t.same([unknown.status, unknown.body.code], [404, -32002], 'the 2025 era\'s resource not found')
  const bad = await call(app, { method: 'POST', url: '/resources/subscribe', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { uri: '' } })
  t.same([bad.status, bad.body.code], [400, -32602])
  const unsub = await app.inject({ method: 'POST', url: '/resources/unsubscribe', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { uri: 'demo://readme' } })
  t.equal(unsub.statusCode, 202)
  t.same(await store.connections.subscriptions('anonymous'), ['demo://items/3'])
  const again = await app.inject({ method: 'POST', url: '/resources/unsubscribe', headers: { 'mcp-protocol-version': '2025-11-25' }, payload: { uri: 'demo://readme' } })
  t.equal(again.statusCode, 202, 'unsubscribing twice is harmless')
})

t.test('templates are tried in order; handler protocol errors pass through', async (t) => {
  const { errors } = await import('../../src/errors.js')
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.resourceTemplate({ uriTemplate: 'a://{x}/one', name: 'one' }, () => 'one')
  mcp.resourceTemplate({ uriTemplate: 'a://{x}/two', name: 'two' }, (_uri, { x }) => ({ contents: [{ uri: `a://${x}/two`, text: 'two' }], resultType: 'complete' }))
  mcp.resource({ uri: 'a://denied', name: 'denied' }, () => {
    throw errors.invalidParams('not for you')
  })
  const { app } = await build(t, { mcp })
  const two = await call(app, { url: `/resources/${enc('a://q/two')}` })
  t.same(two.body.contents, [{ uri: 'a://q/two', text: 'two' }], 'no mimeType when none is declared')
  const legacy = await call(app, { url: `/resources/${enc('a://q/two')}`, headers: { 'mcp-protocol-version': '2025-06-18' } })
  t.notOk('resultType' in legacy.body, 'a handler-set resultType is dropped for legacy clients')
  const denied = await call(app, { url: `/resources/${enc('a://denied')}` })
  t.same([denied.status, denied.body.message], [400, 'not for you'])
  t.throws(() => mcp.resource({ uri: 'relative/path', name: 'r' }, () => ''), /must be absolute/)
  t.throws(() => mcp.resource({ uri: 'a://denied', name: 'r' }, () => ''), /already registered/)
  t.throws(() => mcp.resourceTemplate({ uriTemplate: 'a://{x}/one', name: 'r' }, () => ''), /already registered/)
  t.throws(() => mcp.resourceTemplate({ uriTemplate: 'a://{x}', name: 'r', complete: { y: () => [] } }, () => ''), /unknown variable "y"/)
})
