import t from 'tap'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../src/core/mcp-server.js'
import { encodeJsonHeader } from '../src/headers.js'
import { build, call } from './helper.js'

// Hand-rolled multi round-trip requests (SEP-2322): the wire rules the foundation enforces for any
// handler that answers input_required. Sealed state and resolvers build on these.
const ask = {
  method: 'elicitation/create' as const,
  params: { mode: 'form', message: 'Which city?', requestedSchema: { type: 'object', properties: { city: { type: 'string' } } } }
}
const modern = (caps: Record<string, unknown>) => ({ 'io.modelcontextprotocol/clientCapabilities': caps })

function server() {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'where', input: Type.Object({}) }, (_args, ctx) => {
    const answer = ctx.inputResponses?.city as { action?: string; content?: { city?: string } } | undefined
    if (answer?.content?.city === undefined) return { resultType: 'input_required', inputRequests: { city: ask }, requestState: 'round-1' }
    return `city=${answer.content.city} state=${ctx.requestState}`
  })
  mcp.tool({ name: 'empty' }, () => ({ resultType: 'input_required' }))
  mcp.tool({ name: 'shed' }, (_args, ctx) => (ctx.requestState === undefined ? { resultType: 'input_required', requestState: 'resume-here' } : `resumed from ${ctx.requestState}`))
  mcp.prompt({ name: 'ask' }, (_args, ctx) =>
    ctx.inputResponses?.s === undefined
      ? { resultType: 'input_required', inputRequests: { s: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 10 } } } }
      : 'sampled'
  )
  mcp.prompt({ name: 'p' }, (_args, ctx) => JSON.stringify({ responses: ctx.inputResponses ?? null, state: ctx.requestState ?? null }))
  mcp.resource({ uri: 'x:ask', name: 'ask' }, (_uri, ctx) =>
    ctx.inputResponses === undefined ? { resultType: 'input_required', inputRequests: { r: { method: 'roots/list' } } } : 'answered'
  )
  return mcp
}

t.test('input_required is an ordinary 200 body; the retry completes', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await call(app, { method: 'POST', url: '/tools/where/calls', payload: { _meta: modern({ elicitation: {} }) } })
  t.equal(first.status, 200)
  t.same(first.body, { resultType: 'input_required', inputRequests: { city: ask }, requestState: 'round-1' })
  const retry = await call(app, {
    method: 'POST',
    url: '/tools/where/calls',
    payload: {
      _meta: modern({ elicitation: {} }),
      inputResponses: { city: { action: 'accept', content: { city: 'Oslo' } }, extra: { ignored: true } },
      requestState: first.body.requestState
    }
  })
  t.same(retry.body, { content: [{ type: 'text', text: 'city=Oslo state=round-1' }], resultType: 'complete' })
})

t.test('never ask what the client did not declare: 400 -32021 naming the capability', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const none = await call(app, { method: 'POST', url: '/tools/where/calls', payload: {} })
  t.equal(none.status, 400)
  t.same(none.body.code, -32021)
  t.same(none.body.data, { requiredCapabilities: { elicitation: {} } })
  const other = await call(app, { method: 'POST', url: '/tools/where/calls', payload: { _meta: modern({ sampling: {} }) } })
  t.same(other.body.data, { requiredCapabilities: { elicitation: {} } })
  const roots = await call(app, { url: '/resources/x%3Aask' })
  t.same([roots.status, roots.body.data], [400, { requiredCapabilities: { roots: {} } }])
})

t.test('prompts may ask too (sampling)', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const headers = { 'mcp-meta': JSON.stringify(modern({ sampling: {} })) }
  const first = await call(app, { url: '/prompts/ask', headers })
  t.same(Object.keys(first.body.inputRequests), ['s'])
  const answered = await call(app, { url: '/prompts/ask', headers: { ...headers, 'mcp-input-responses': '{"s":{"role":"assistant"}}' } })
  t.equal(answered.body.messages[0].content.text, 'sampled')
})

t.test('legacy-era clients cannot receive input_required', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const res = await call(app, {
    method: 'POST',
    url: '/tools/shed/calls',
    payload: {},
    headers: { 'mcp-protocol-version': '2025-11-25' }
  })
  t.same([res.status, res.body.code], [400, -32021])
  t.match(res.body.message, /multi round-trip/)
})

t.test('load shedding: requestState alone needs no capability', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await call(app, { method: 'POST', url: '/tools/shed/calls', payload: {} })
  t.same(first.body, { resultType: 'input_required', requestState: 'resume-here' })
  const second = await call(app, { method: 'POST', url: '/tools/shed/calls', payload: { requestState: first.body.requestState } })
  t.equal(second.body.content[0].text, 'resumed from resume-here')
})

t.test('an input_required with nothing in it is a server bug: 500', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const res = await call(app, { method: 'POST', url: '/tools/empty/calls', payload: {} })
  t.same([res.status, res.body], [500, { code: -32603, message: 'Internal error' }])
})

t.test('GET retries carry Mcp-Input-Responses and Mcp-Request-State', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const read = async (headers: Record<string, string>) => call(app, { url: '/prompts/p', headers })
  const both = await read({
    'mcp-input-responses': encodeJsonHeader({ k: { action: 'accept', content: { n: 'Zoë' } } }),
    'mcp-request-state': 'eyJhbGciOiJkaXIifQ..abc.def.ghi'
  })
  t.same(JSON.parse(both.body.messages[0].content.text), {
    responses: { k: { action: 'accept', content: { n: 'Zoë' } } },
    state: 'eyJhbGciOiJkaXIifQ..abc.def.ghi'
  })
  const quoted = await read({ 'mcp-request-state': '"opaque"' })
  t.equal(JSON.parse(quoted.body.messages[0].content.text).state, 'opaque', 'the JSON string form works too')
  for (const [name, value, message] of [
    ['mcp-input-responses', '{"k":1}', /"k" must be an object/],
    ['mcp-input-responses', '[]', /must be a JSON object/],
    ['mcp-request-state', '', /Invalid Mcp-Request-State header/],
    ['mcp-request-state', '"unterminated', /Invalid Mcp-Request-State header: not valid JSON/]
  ] as const) {
    const res = await read({ [name]: value })
    t.same([res.status, res.body.code], [400, -32602], `${name}: ${value}`)
    t.match(res.body.message, message)
  }
})

t.test('an input_required read is not an HTTP-cacheable representation', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const res = await call(app, { url: '/resources/x%3Aask', headers: { 'mcp-meta': JSON.stringify(modern({ roots: {} })) } })
  t.equal(res.body.resultType, 'input_required')
  t.equal(res.headers.etag, undefined)
  t.notOk('ttlMs' in res.body, 'no cache hints on an interim result')
  const answered = await call(app, {
    url: '/resources/x%3Aask',
    headers: { 'mcp-meta': JSON.stringify(modern({ roots: {} })), 'mcp-input-responses': '{"r":{"roots":[]}}' }
  })
  t.equal(answered.body.contents[0].text, 'answered')
})
