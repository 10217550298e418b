import t from 'tap'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { errors } from '../../src/errors.js'
import { DEMO_TOOLS, build, call } from '../helpers/helper.js'

const post = (url: string, body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url,
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json', ...headers }
})

/** The text of a 200 `isError` result (how invalid arguments answer); anything else fails the test. */
function invalid(res: { status: number; body: any }): string | undefined {
  return res.status === 200 && res.body.isError === true ? res.body.content[0].text : undefined
}

t.test('GET /tools lists the catalogue with modern-era fields', async (t) => {
  const { app } = await build(t)
  const res = await call(app, { url: '/tools' })
  t.equal(res.status, 200)
  t.same(res.body.tools.map((x: { name: string }) => x.name), DEMO_TOOLS)
  t.equal(res.body.resultType, 'complete')
  t.equal(res.body.ttlMs, 0)
  t.equal(res.body.cacheScope, 'private')
  t.notOk('nextCursor' in res.body)
  t.match(res.headers.etag, /^"[A-Za-z0-9_-]+"$/)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
})

t.test('legacy era lists carry no resultType or cache hints', async (t) => {
  const { app } = await build(t)
  const res = await call(app, { url: '/tools', headers: { 'mcp-protocol-version': '2025-06-18' } })
  t.equal(res.headers['mcp-protocol-version'], '2025-06-18')
  t.notOk('resultType' in res.body)
  t.notOk('ttlMs' in res.body)
  t.notOk('cacheScope' in res.body)
})

t.test('pagination follows nextCursor to the end; bad cursors are 400', async (t) => {
  const { app } = await build(t, { mcp: (await import('../../src/demo/catalogue.js')).createDemoServer({ pageSize: 2 }) })
  const first = await call(app, { url: '/tools' })
  t.equal(first.body.tools.length, 2)
  t.type(first.body.nextCursor, 'string')
  const names = first.body.tools.map((x: { name: string }) => x.name)
  let page = first
  while (page.body.nextCursor !== undefined) {
    page = await call(app, { url: `/tools?cursor=${encodeURIComponent(page.body.nextCursor)}` })
    t.ok(page.body.tools.length <= 2)
    t.not(page.headers.etag, first.headers.etag, 'each page has its own ETag')
    names.push(...page.body.tools.map((x: { name: string }) => x.name))
  }
  t.same(names, DEMO_TOOLS, 'every tool once, in order')
  for (const cursor of ['garbage', Buffer.from('null').toString('base64url'), Buffer.from('{"k":"prompts","o":2}').toString('base64url'), Buffer.from('{"k":"tools","o":99}').toString('base64url')]) {
    const bad = await call(app, { url: `/tools?cursor=${cursor}` })
    t.equal(bad.status, 400, cursor)
    t.same(bad.body, { code: -32602, message: 'Invalid cursor' })
  }
})

t.test('ETag: 304 on If-None-Match; changes when and only when the list changes', async (t) => {
  const { app, mcp } = await build(t)
  const a = await call(app, { url: '/tools' })
  const again = await call(app, { url: '/tools' })
  t.equal(again.headers.etag, a.headers.etag, 'stable while nothing changes')
  const nm = await app.inject({ url: '/tools', headers: { 'if-none-match': a.headers.etag as string } })
  t.equal(nm.statusCode, 304)
  t.equal(nm.payload, '', '304 has no body')
  t.equal(nm.headers.etag, a.headers.etag)
  const weak = await app.inject({ url: '/tools', headers: { 'if-none-match': `"x", W/${a.headers.etag}` } })
  t.equal(weak.statusCode, 304, 'weak comparison and lists of tags')
  const reg = mcp.tool({ name: 'late', description: 'added at run time' }, () => 'hi')
  const b = await call(app, { url: '/tools' })
  t.not(b.headers.etag, a.headers.etag, 'adding a tool changes the ETag')
  t.equal(b.body.tools.at(-1).name, 'late')
  const stale = await app.inject({ url: '/tools', headers: { 'if-none-match': a.headers.etag as string } })
  t.equal(stale.statusCode, 200, 'the old ETag no longer matches')
  reg.remove()
  const c = await call(app, { url: '/tools' })
  t.equal(c.headers.etag, a.headers.etag, 'same content, same ETag')
  const gone = await call(app, post('/tools/late/calls', {}))
  t.equal(gone.status, 404, 'a removed tool cannot be called')
  t.not(
    (await call(app, { url: '/tools', headers: { 'mcp-protocol-version': '2025-11-25' } })).headers.etag,
    a.headers.etag,
    'each era has its own representation'
  )
})

t.test('POST /tools/{name}/calls runs the tool', async (t) => {
  const { app } = await build(t)
  const echo = await call(app, post('/tools/echo/calls', { arguments: { text: 'hello' }, name: 'ignored' }))
  t.equal(echo.status, 200)
  t.same(echo.body, { content: [{ type: 'text', text: 'hello' }], resultType: 'complete' })
  const add = await call(app, post('/tools/add/calls', { arguments: { a: 2, b: 40 } }))
  t.same(add.body.structuredContent, { sum: 42 })
  t.same(add.body.content, [{ type: 'text', text: '{"sum":42}' }])
  const legacy = await call(app, post('/tools/add/calls', { arguments: { a: 1, b: 1 } }, { 'mcp-protocol-version': '2025-11-25' }))
  t.notOk('resultType' in legacy.body)
})

t.test('arguments that fail the input schema are a tool error naming the field (SEP-1303)', async (t) => {
  const { app } = await build(t)
  const missing = await call(app, post('/tools/add/calls', { arguments: { a: 1 } }))
  t.equal(missing.status, 200)
  t.same(missing.body, { content: [{ type: 'text', text: 'Invalid arguments for tool add: b is required' }], isError: true, resultType: 'complete' })
  const wrong = await call(app, post('/tools/add/calls', { arguments: { a: 1, b: 'two' } }))
  t.equal(invalid(wrong), 'Invalid arguments for tool add: b must be number')
  const noArgs = await call(app, post('/tools/echo/calls', {}))
  t.equal(invalid(noArgs), 'Invalid arguments for tool echo: text is required')
  // A body that is not a call at all is still the protocol's error.
  const notObject = await call(app, post('/tools/echo/calls', { arguments: 'text' }))
  t.equal(notObject.status, 400)
  t.equal(notObject.body.code, -32602)
  t.match(notObject.body.message, /arguments/)
})

t.test('bad bodies: parse error, empty, not an object, wrong media type, too large', async (t) => {
  const { app } = await build(t, { bodyLimit: 2048 })
  const parse = await call(app, { method: 'POST', url: '/tools/echo/calls', payload: '{nope', headers: { 'content-type': 'application/json' } })
  t.same([parse.status, parse.body.code], [400, -32700])
  const empty = await call(app, { method: 'POST', url: '/tools/echo/calls', payload: '', headers: { 'content-type': 'application/json' } })
  t.same([empty.status, empty.body.code], [400, -32600])
  const array = await call(app, post('/tools/echo/calls', []))
  t.same([array.status, array.body.code], [400, -32602])
  const text = await call(app, { method: 'POST', url: '/tools/echo/calls', payload: 'hi', headers: { 'content-type': 'text/plain' } })
  t.same([text.status, text.body.code], [415, -32600])
  const big = await call(app, post('/tools/echo/calls', { arguments: { text: 'x'.repeat(4096) } }))
  t.same([big.status, big.body.code], [413, -32600])
  const short = await call(app, { method: 'POST', url: '/tools/echo/calls', payload: '{"arguments":{}}', headers: { 'content-type': 'application/json', 'content-length': '3' } })
  t.same([short.status, short.body.code], [400, -32600], 'a Content-Length that does not match the body')
})

t.test('unknown tool is 404 -32602', async (t) => {
  const { app } = await build(t)
  const res = await call(app, post('/tools/nope/calls', {}))
  t.equal(res.status, 404)
  t.same(res.body, { code: -32602, message: 'Unknown tool: nope' })
})

t.test('tool failures, protocol errors and output validation', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'boom' }, () => {
    throw new Error('disk on fire')
  })
  mcp.tool({ name: 'refuse' }, () => {
    throw errors.invalidParams('not today')
  })
  const Out = Type.Object({ n: Type.Integer() })
  mcp.tool({ name: 'liar', output: Out }, () => ({ structuredContent: { n: 'one' as unknown as number } }))
  mcp.tool({ name: 'silent', output: Out }, () => ({ content: [] }))
  mcp.tool({ name: 'sad', output: Out }, () => ({ content: [{ type: 'text', text: 'failed' }], isError: true }))
  mcp.tool({ name: 'typed', output: Out }, () => ({ structuredContent: { n: 1 }, content: [{ type: 'text', text: 'one' }] }))
  const { app } = await build(t, { mcp })
  const boom = await call(app, post('/tools/boom/calls', {}))
  t.equal(boom.status, 200, 'a failing tool is a result, not an HTTP error')
  t.same(boom.body, { content: [{ type: 'text', text: 'disk on fire' }], isError: true, resultType: 'complete' })
  const refuse = await call(app, post('/tools/refuse/calls', {}))
  t.same([refuse.status, refuse.body], [400, { code: -32602, message: 'not today' }])
  const liar = await call(app, post('/tools/liar/calls', {}))
  t.equal(liar.status, 500)
  t.equal(liar.body.code, -32603)
  t.match(liar.body.message, /n must be integer/)
  t.notMatch(liar.raw, /at .*\.ts:\d+/, 'no stack trace')
  const silent = await call(app, post('/tools/silent/calls', {}))
  t.match(silent.body.message, /structuredContent is missing/)
  const sad = await call(app, post('/tools/sad/calls', {}))
  t.equal(sad.status, 200, 'an error result is not checked against the output schema')
  t.equal(sad.body.isError, true)
  const typed = await call(app, post('/tools/typed/calls', {}))
  t.same(typed.body.content, [{ type: 'text', text: 'one' }], 'given content is kept')
})

t.test('registration rejects bad definitions', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  t.throws(() => mcp.tool({ name: 'has space' }, () => ''), /must match/)
  t.throws(() => mcp.tool({ name: 'x'.repeat(129) }, () => ''), /must match/)
  t.throws(() => mcp.tool({ name: 'a', input: Type.String() as never }, () => ''), /input must be an object schema/)
  t.throws(() => mcp.tool({ name: 'a', output: Type.Array(Type.String()) as never }, () => ''), /output must be an object schema/)
  t.throws(() => mcp.tool({ name: 'a', input: Type.Unsafe<{}>({ type: 'object', properties: { x: { type: 'nonsense' } } }) }, () => ''), /invalid JSON Schema/)
  mcp.tool({ name: 'a' }, () => '')
  t.throws(() => mcp.tool({ name: 'a' }, () => ''), /already registered/)
})

t.test('the demo catalogue: get_weather is deterministic per location', async (t) => {
  const { app } = await build(t)
  const a = await call(app, post('/tools/get_weather/calls', { arguments: { location: 'Oslo' } }))
  const b = await call(app, post('/tools/get_weather/calls', { arguments: { location: 'Oslo' } }))
  t.match(a.body.content[0].text, /^Weather in Oslo: [A-Za-z ]+, \d+°C$/)
  t.equal(a.body.content[0].text, b.body.content[0].text)
  const empty = await call(app, post('/tools/get_weather/calls', { arguments: { location: '' } }))
  t.equal(invalid(empty), 'Invalid arguments for tool get_weather: location must NOT have fewer than 1 characters')
})

t.test('validation messages for closed objects and enums; throwing a non-Error', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool(
    { name: 'strict', input: Type.Object({ mode: Type.Union([Type.Literal('a'), Type.Literal('b')]) }, { additionalProperties: false }) },
    ({ mode }) => mode
  )
  mcp.tool({ name: 'pick', input: Type.Unsafe<{ c: string }>({ type: 'object', properties: { c: { enum: ['red', 'blue'] } } }) }, () => 'ok')
  mcp.tool({ name: 'odd' }, () => {
    throw 'a string' // eslint-disable-line no-throw-literal
  })
  const { app } = await build(t, { mcp })
  const extra = await call(app, post('/tools/strict/calls', { arguments: { mode: 'a', other: 1 } }))
  t.equal(invalid(extra), 'Invalid arguments for tool strict: other is not allowed')
  const enumErr = await call(app, post('/tools/pick/calls', { arguments: { c: 'green' } }))
  t.equal(invalid(enumErr), 'Invalid arguments for tool pick: c must be one of ["red","blue"]')
  mcp.tool({ name: 'some', input: Type.Object({}, { minProperties: 1 }) }, () => 'ok')
  const root = await call(app, post('/tools/some/calls', { arguments: {} }))
  t.equal(invalid(root), 'Invalid arguments for tool some: (root) must NOT have fewer than 1 properties')
  const odd = await call(app, post('/tools/odd/calls', {}))
  t.same(odd.body.content, [{ type: 'text', text: 'a string' }])
})

t.test('a registration handle removes only what it registered', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  const changes: string[] = []
  mcp.onChange((kind) => changes.push(kind))
  const first = mcp.tool({ name: 'x' }, () => 'first')
  first.remove()
  first.remove()
  mcp.tool({ name: 'x' }, () => 'second')
  first.remove()
  t.same(changes, ['tools', 'tools', 'tools'], 'a second remove() and a stale handle change nothing')
  const { app } = await build(t, { mcp })
  t.equal((await call(app, post('/tools/x/calls', {}))).body.content[0].text, 'second')
})

t.test('checkSchemas: false: the schemas describe the tool, the handler judges its arguments and answers as it likes', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  const seen: unknown[] = []
  const input = Type.Object({ a: Type.Number() }, { additionalProperties: false })
  const output = Type.Object({ sum: Type.Number() })
  mcp.tool({ name: 'judged', input, output, checkSchemas: false }, (args) => {
    seen.push(args)
    return { content: [{ type: 'text', text: 'as given' }], structuredContent: { sum: 'not a number' } } as never
  })
  mcp.tool({ name: 'checked', input, output }, () => ({ structuredContent: { sum: 1 } }))
  const { app } = await build(t, { mcp })
  const listed = (await call(app, { url: '/tools' })).body.tools
  t.same(listed.map((x: { inputSchema: object }) => x.inputSchema), [listed[1].inputSchema, listed[1].inputSchema], 'listed with its schema all the same')
  const res = await call(app, post('/tools/judged/calls', { arguments: { a: 'x', extra: true } }))
  t.same([res.status, res.body.content, res.body.structuredContent], [200, [{ type: 'text', text: 'as given' }], { sum: 'not a number' }], 'its result as it gave it')
  t.same(seen, [{ a: 'x', extra: true }], 'the arguments as sent')
  t.match(invalid(await call(app, post('/tools/checked/calls', { arguments: { a: 'x' } }))), /^Invalid arguments for tool checked/, 'the default checks')
})
