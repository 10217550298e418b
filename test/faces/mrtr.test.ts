import t from 'tap'
import { randomBytes } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { McpServer } from '../../src/core/mcp-server.js'
import { encodeJsonHeader } from '../../src/headers.js'
import { elicit, elicitUrl, listRoots, sample } from '../../src/mrtr/questions.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import { build, call, tamper } from '../helpers/helper.js'

// Multi round-trip requests (SEP-2322) as plain HTTP, hand-rolled: a handler answers
// inputRequired(...) and reads ctx.inputResponses and its own (sealed, typed) ctx.requestState.
const caps = (c: Record<string, unknown>) => ({ 'io.modelcontextprotocol/clientCapabilities': c })
const ALL = caps({ elicitation: { form: {}, url: {} }, sampling: {}, roots: {} })
const keyRing = () => `k1:${randomBytes(32).toString('base64url')}`
const City = Type.Object({ city: Type.String({ minLength: 2 }) })

function server(stateKeys?: string) {
  const mcp = new McpServer({ name: 't', version: '1', ...(stateKeys === undefined ? {} : { stateKeys }) })
  mcp.tool(
    { name: 'where', input: Type.Object({ units: Type.Optional(Type.String()) }), state: Type.Object({ round: Type.Integer() }) },
    (args, ctx) => {
      const answer = ctx.inputResponses?.city as { action: string; content?: { city: string } } | undefined
      if (answer?.content === undefined) {
        return inputRequired({ inputRequests: { city: elicit('Which city?', City) }, state: { round: (ctx.requestState?.round ?? 0) + 1 } })
      }
      return `city=${answer.content.city} round=${ctx.requestState?.round} units=${args.units ?? 'metric'}`
    }
  )
  mcp.tool({ name: 'all_kinds' }, (_args, ctx) =>
    ctx.inputResponses === undefined
      ? inputRequired({
        inputRequests: {
          form: elicit('Name?', Type.Object({ name: Type.String() })),
          link: elicitUrl('Sign in', 'https://example.com/login', 'e-1'),
          llm: sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Hi' } }], maxTokens: 5 }),
          roots: listRoots(),
          raw: { method: 'elicitation/create', params: { mode: 'form', message: 'Raw?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } },
          rawUrl: { method: 'elicitation/create', params: { mode: 'url', message: 'Raw link', url: 'https://example.com', elicitationId: 'r' } },
          rawRoots: { method: 'roots/list' }
        }
      })
      : JSON.stringify(ctx.inputResponses)
  )
  mcp.tool({ name: 'shed', input: Type.Object({ n: Type.Integer() }), state: Type.Object({ done: Type.Integer() }) }, ({ n }, ctx) => {
    const done = ctx.requestState?.done ?? 0
    // Load shedding: do a slice of the work, hand the rest to whichever instance takes the retry.
    return done + 10 >= n ? `done ${n}` : inputRequired({ state: { done: done + 10 } })
  })
  mcp.tool({ name: 'empty' }, () => inputRequired({}))
  mcp.prompt({ name: 'ask_prompt' }, (_args, ctx) =>
    ctx.inputResponses?.s === undefined
      ? inputRequired({ inputRequests: { s: sample({ messages: [], maxTokens: 10 }) } })
      : `sampled by ${(ctx.inputResponses.s as { model: string }).model}`
  )
  mcp.resource({ uri: 'x:ask', name: 'ask' }, (_uri, ctx) =>
    ctx.inputResponses?.r === undefined ? inputRequired({ inputRequests: { r: listRoots() } }) : `roots ${JSON.stringify(ctx.inputResponses.r)}`
  )
  return mcp
}

const callTool = (app: FastifyInstance, name: string, body: Record<string, unknown>) =>
  call(app, { method: 'POST', url: `/tools/${name}/calls`, payload: { _meta: ALL, ...body } })

t.test('input_required is an ordinary 200; the retry with answers and state completes', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await callTool(app, 'where', { arguments: { units: 'imperial' } })
  t.equal(first.status, 200)
  t.equal(first.body.resultType, 'input_required')
  t.same(first.body.inputRequests.city, {
    method: 'elicitation/create',
    params: { mode: 'form', message: 'Which city?', requestedSchema: { type: 'object', required: ['city'], properties: { city: { minLength: 2, type: 'string' } } } }
  })
  t.match(first.body.requestState, /^eyJ[\w-]+\.\.[\w-]+\.[\w-]+\.[\w-]+$/, 'a compact JWE')
  t.notOk('ttlMs' in first.body, 'an interim result carries no cache hints')
  const done = await callTool(app, 'where', {
    arguments: { units: 'imperial' },
    requestState: first.body.requestState,
    inputResponses: { city: { action: 'accept', content: { city: 'Oslo' } }, unknown_key: { whatever: 1 } }
  })
  t.same(done.body, { content: [{ type: 'text', text: 'city=Oslo round=1 units=imperial' }], resultType: 'complete' })
})

t.test('missing answers lead to a new input_required; unknown keys are ignored', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await callTool(app, 'where', {})
  const again = await callTool(app, 'where', { requestState: first.body.requestState, inputResponses: { other: { action: 'accept' } } })
  t.equal(again.body.resultType, 'input_required')
  t.ok(again.body.inputRequests.city)
  const third = await callTool(app, 'where', { requestState: again.body.requestState, inputResponses: { city: { action: 'accept', content: { city: 'Rome' } } } })
  t.equal(third.body.content[0].text, 'city=Rome round=2 units=metric', 'the state carried the round count')
  const noState = await callTool(app, 'where', { inputResponses: { city: { action: 'accept', content: { city: 'Rome' } } } })
  t.equal(noState.body.resultType, 'input_required', 'answers to questions never asked (no state) are ignored')
})

t.test('malformed answers are 400 -32602 naming the key', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await callTool(app, 'where', {})
  const bad = async (response: unknown) =>
    callTool(app, 'where', { requestState: first.body.requestState, inputResponses: { city: response } })
  for (const [response, message] of [
    [{ action: 'maybe' }, /inputResponses\["city"\]: action must be one of/],
    [{ content: { city: 'Oslo' } }, /action is required/],
    [{ action: 'accept', content: { city: 'X' } }, /content\.city must NOT have fewer than 2 characters/],
    [{ action: 'accept', content: { town: 'Oslo' } }, /content\.city is required/],
    [{ action: 'accept', content: 'Oslo' }, /content must be object/],
    [{ action: 'accept' }, /content\.city is required/]
  ] as const) {
    const res = await bad(response)
    t.same([res.status, res.body.code], [400, -32602], JSON.stringify(response))
    t.match(res.body.message, message)
  }
  const declined = await bad({ action: 'decline' })
  t.equal(declined.status, 200, 'a decline is a valid answer; the handler decides')
  t.equal(declined.body.resultType, 'input_required')
})

t.test('every kind of question, each answer checked against its method', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await callTool(app, 'all_kinds', {})
  t.same(Object.keys(first.body.inputRequests).sort(), ['form', 'link', 'llm', 'raw', 'rawRoots', 'rawUrl', 'roots'])
  t.same(first.body.inputRequests.link.params, { mode: 'url', message: 'Sign in', url: 'https://example.com/login', elicitationId: 'e-1' })
  const answers = {
    form: { action: 'accept', content: { name: 'Ada' } },
    link: { action: 'accept' },
    llm: { role: 'assistant', content: { type: 'text', text: 'Hello' }, model: 'm1' },
    roots: { roots: [{ uri: 'file:///home/ada', name: 'home' }] },
    raw: { action: 'accept', content: { ok: true } },
    rawUrl: { action: 'decline' },
    rawRoots: { roots: [] }
  }
  const done = await callTool(app, 'all_kinds', { requestState: first.body.requestState, inputResponses: answers })
  t.same(JSON.parse(done.body.content[0].text), answers)
  for (const [key, wrong] of [
    ['llm', { role: 'robot', content: {}, model: 'm' }],
    ['roots', { roots: [{ uri: 'https://not-a-file' }] }],
    ['raw', { action: 'accept', content: { ok: 'yes' } }]
  ] as const) {
    const res = await callTool(app, 'all_kinds', { requestState: first.body.requestState, inputResponses: { ...answers, [key]: wrong } })
    t.same([res.status, res.body.code], [400, -32602], key)
    t.match(res.body.message, new RegExp(`inputResponses\\["${key}"\\]`))
  }
})

t.test('never ask what the client did not declare: 400 -32021 with requiredCapabilities', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const none = await call(app, { method: 'POST', url: '/tools/all_kinds/calls', payload: {} })
  t.same([none.status, none.body.code], [400, -32021])
  t.same(none.body.data, { requiredCapabilities: { elicitation: { url: {} }, sampling: {}, roots: {} } })
  const formOnly = await call(app, {
    method: 'POST',
    url: '/tools/all_kinds/calls',
    payload: { _meta: caps({ elicitation: {}, sampling: {}, roots: {} }) }
  })
  t.same(formOnly.body.data, { requiredCapabilities: { elicitation: { url: {} } } }, 'url mode needs elicitation.url')
  const roots = await call(app, { url: '/resources/x%3Aask' })
  t.same([roots.status, roots.body.data], [400, { requiredCapabilities: { roots: {} } }])
})

t.test('legacy era: questions the initialize did not declare are 400 -32021; state alone loops in-process', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const legacy = { 'mcp-protocol-version': '2025-11-25' }
  const res = await call(app, { method: 'POST', url: '/tools/where/calls', payload: {}, headers: legacy })
  t.same([res.status, res.body.code, res.body.data], [400, -32021, { requiredCapabilities: { elicitation: {} } }])
  const shed = await call(app, { method: 'POST', url: '/tools/shed/calls', payload: { arguments: { n: 25 } }, headers: legacy })
  t.equal(shed.body.content[0].text, 'done 25', 'load shedding without a client round trip: the rounds run here')
})

t.test('prompts and resources ask through GET headers, retried the same way', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const meta = { 'mcp-meta': encodeJsonHeader(ALL) }
  const first = await call(app, { url: '/prompts/ask_prompt', headers: meta })
  t.same(Object.keys(first.body.inputRequests), ['s'])
  const done = await call(app, {
    url: '/prompts/ask_prompt',
    headers: {
      ...meta,
      'mcp-request-state': first.body.requestState,
      'mcp-input-responses': encodeJsonHeader({ s: { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'Zoë-1' } })
    }
  })
  t.equal(done.body.messages[0].content.text, 'sampled by Zoë-1')
  const r1 = await call(app, { url: '/resources/x%3Aask', headers: meta })
  t.equal(r1.headers.etag, undefined, 'no ETag on an interim result')
  const r2 = await call(app, {
    method: 'POST',
    url: '/resources/x%3Aask',
    payload: { _meta: ALL, requestState: r1.body.requestState, inputResponses: { r: { roots: [] } } }
  })
  t.equal(r2.body.contents[0].text, 'roots {"roots":[]}')
  const quoted = await call(app, { url: '/resources/x%3Aask', headers: { ...meta, 'mcp-request-state': JSON.stringify(r1.body.requestState), 'mcp-input-responses': '{"r":{"roots":[]}}' } })
  t.equal(quoted.body.contents[0].text, 'roots {"roots":[]}', 'the JSON-string form of Mcp-Request-State works')
  for (const [name, value] of [
    ['mcp-input-responses', '{"r":1}'],
    ['mcp-request-state', ''],
    ['mcp-request-state', '"unterminated']
  ] as const) {
    const res = await call(app, { url: '/resources/x%3Aask', headers: { ...meta, [name]: value } })
    t.same([res.status, res.body.code], [400, -32602], `${name}: ${value}`)
  }
})

t.test('requestState is bound: another tool, prompt, URI, arguments or principal is refused', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await callTool(app, 'where', { arguments: { units: 'metric' } })
  const state = first.body.requestState
  const refused = [
    await callTool(app, 'where', { arguments: { units: 'imperial' }, requestState: state }),
    await callTool(app, 'all_kinds', { requestState: state }),
    await call(app, { url: '/prompts/ask_prompt', headers: { 'mcp-meta': encodeJsonHeader(ALL), 'mcp-request-state': state } }),
    await call(app, { url: '/resources/x%3Aask', headers: { 'mcp-meta': encodeJsonHeader(ALL), 'mcp-request-state': state } }),
    await callTool(app, 'where', { arguments: { units: 'metric' }, requestState: tamper(state) }),
    await callTool(app, 'where', { arguments: { units: 'metric' }, requestState: 'x'.repeat(40_000) })
  ]
  for (const res of refused) t.same([res.status, res.body], [400, { code: -32602, message: 'Invalid or expired requestState' }])
})

t.test('two instances sharing a key serve alternate rounds; different keys refuse', async (t) => {
  const ring = keyRing()
  const a = (await build(t, { mcp: server(ring) })).app
  const b = (await build(t, { mcp: server(ring) })).app
  const stranger = (await build(t, { mcp: server(keyRing()) })).app
  let res = await callTool(a, 'where', {})
  res = await callTool(b, 'where', { requestState: res.body.requestState })
  t.equal(res.body.resultType, 'input_required', 'B read the state A sealed')
  const fromB = res.body.requestState
  res = await callTool(a, 'where', { requestState: fromB, inputResponses: { city: { action: 'accept', content: { city: 'Lima' } } } })
  t.equal(res.body.content[0].text, 'city=Lima round=2 units=metric')
  const refused = await callTool(stranger, 'where', { requestState: fromB })
  t.same([refused.status, refused.body.message], [400, 'Invalid or expired requestState'])
})

t.test('load shedding: state with no inputRequests, resumed by another instance', async (t) => {
  const ring = keyRing()
  const instances = [(await build(t, { mcp: server(ring) })).app, (await build(t, { mcp: server(ring) })).app]
  let res = await call(instances[0]!, { method: 'POST', url: '/tools/shed/calls', payload: { arguments: { n: 35 } } })
  let rounds = 1
  while (res.body.resultType === 'input_required') {
    t.notOk('inputRequests' in res.body, 'nothing to ask, only state to carry')
    res = await call(instances[rounds % 2]!, { method: 'POST', url: '/tools/shed/calls', payload: { arguments: { n: 35 }, requestState: res.body.requestState } })
    rounds++
  }
  t.equal(res.body.content[0].text, 'done 35')
  t.equal(rounds, 4, 'four slices of ten, alternating instances')
})

t.test('rolling upgrade: state from an instance running other code', async (t) => {
  const ring = keyRing()
  const Login = Type.Object({ user: Type.String() })
  const oldCode = new McpServer({ name: 'old', version: '1', stateKeys: ring })
  oldCode.tool({ name: 'login' }, (_args, ctx) =>
    ctx.inputResponses === undefined
      ? inputRequired({ inputRequests: { github_login: elicit('GitHub?', Login), google_login: elicit('Google?', Login) } })
      : 'old done'
  )
  const newCode = new McpServer({ name: 'new', version: '2', stateKeys: ring })
  newCode.tool({ name: 'login', state: Type.Object({ github: Type.String() }) }, (_args, ctx) => {
    const github = ctx.requestState?.github ?? (ctx.inputResponses?.github_login as { content?: { user: string } } | undefined)?.content?.user
    const microsoft = (ctx.inputResponses?.microsoft_login as { content?: { user: string } } | undefined)?.content?.user
    if (github === undefined) return inputRequired({ inputRequests: { github_login: elicit('GitHub?', Login) } })
    if (microsoft === undefined) return inputRequired({ inputRequests: { microsoft_login: elicit('Microsoft?', Login) }, state: { github } })
    return `github=${github} microsoft=${microsoft}`
  })
  const oldApp = (await build(t, { mcp: oldCode })).app
  const newApp = (await build(t, { mcp: newCode })).app
  const r1 = await callTool(oldApp, 'login', {})
  t.same(Object.keys(r1.body.inputRequests).sort(), ['github_login', 'google_login'])
  const r2 = await callTool(newApp, 'login', {
    requestState: r1.body.requestState,
    inputResponses: { github_login: { action: 'accept', content: { user: 'octocat' } }, google_login: { action: 'accept', content: { user: 'g' } } }
  })
  t.same(Object.keys(r2.body.inputRequests), ['microsoft_login'], 'the new code asks only for what it lacks')
  const r3 = await callTool(newApp, 'login', { requestState: r2.body.requestState, inputResponses: { microsoft_login: { action: 'accept', content: { user: 'ms' } } } })
  t.equal(r3.body.content[0].text, 'github=octocat microsoft=ms', 'the answer from the old round was not asked again')
})

t.test('state that no longer fits the state schema is refused', async (t) => {
  const ring = keyRing()
  const v1 = new McpServer({ name: 'v1', version: '1', stateKeys: ring })
  v1.tool({ name: 's' }, () => inputRequired({ state: { step: 'one' } }))
  const v2 = new McpServer({ name: 'v2', version: '2', stateKeys: ring })
  v2.tool({ name: 's', state: Type.Object({ step: Type.Integer() }) }, () => 'v2')
  const r1 = await callTool((await build(t, { mcp: v1 })).app, 's', {})
  const r2 = await callTool((await build(t, { mcp: v2 })).app, 's', { requestState: r1.body.requestState })
  t.same([r2.status, r2.body.message], [400, 'Invalid or expired requestState'])
})

t.test('an input_required with nothing to ask or carry is a server bug: 500', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const res = await callTool(app, 'empty', {})
  t.same([res.status, res.body], [500, { code: -32603, message: 'Internal error' }])
})

t.test('a sealed token for something else (not round state) is refused as requestState', async (t) => {
  const mcp = server()
  const { app } = await build(t, { mcp })
  const { digestArguments } = await import('../../src/mrtr/seal.js')
  const forged = mcp.sealer.seal({ principal: 'anonymous', method: 'tools/call', target: 'where', args: digestArguments({}) }, 'a resume token, say')
  const res = await callTool(app, 'where', { requestState: forged })
  t.same([res.status, res.body.message], [400, 'Invalid or expired requestState'])
})

t.test('retry parameters in headers on POST; never both places; a retried GET read is not cacheable', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const first = await callTool(app, 'where', {})
  const viaHeaders = await call(app, {
    method: 'POST',
    url: '/tools/where/calls',
    payload: {},
    headers: {
      'mcp-meta': encodeJsonHeader(ALL),
      'mcp-request-state': first.body.requestState,
      'mcp-input-responses': encodeJsonHeader({ city: { action: 'accept', content: { city: 'Bern' } } })
    }
  })
  t.equal(viaHeaders.body.content[0].text, 'city=Bern round=1 units=metric')
  const both = await call(app, { method: 'POST', url: '/tools/where/calls', payload: { requestState: 'x' }, headers: { 'mcp-request-state': 'y' } })
  t.same([both.status, both.body.message], [400, 'Send requestState in the body or in the Mcp-Request-State header, not both'])
  const garbage = await call(app, { method: 'POST', url: '/prompts/ask_prompt', payload: {}, headers: { 'mcp-request-state': 'garbage' } })
  t.same([garbage.status, garbage.body.message], [400, 'Invalid or expired requestState'], 'a bad state in a POST header is not ignored')
  const meta = { 'mcp-meta': encodeJsonHeader(ALL) }
  const r1 = await call(app, { url: '/resources/x%3Aask', headers: meta })
  const r2 = await call(app, { url: '/resources/x%3Aask', headers: { ...meta, 'mcp-request-state': r1.body.requestState, 'mcp-input-responses': '{"r":{"roots":[]}}' } })
  t.equal(r2.body.contents[0].text, 'roots {"roots":[]}')
  t.equal(r2.headers.etag, undefined, 'results of a retry must not be cached')
  t.equal(r2.headers['cache-control'], undefined)
})

t.test('state too large to seal is a server error, not a token the server would refuse', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1', maxStateBytes: 1024 })
  mcp.tool({ name: 'hoard' }, () => inputRequired({ state: { blob: 'x'.repeat(2000) } }))
  const { app } = await build(t, { mcp })
  const res = await callTool(app, 'hoard', {})
  t.same([res.status, res.body], [500, { code: -32603, message: 'Internal error' }])
})

t.test('expired state', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1', stateTtlMs: 1 })
  mcp.tool({ name: 'slow' }, (_a, ctx) => (ctx.requestState === undefined ? inputRequired({ state: 1 }) : 'never'))
  const { app } = await build(t, { mcp })
  const r1 = await callTool(app, 'slow', {})
  await new Promise((resolve) => setTimeout(resolve, 5))
  const r2 = await callTool(app, 'slow', { requestState: r1.body.requestState })
  t.same([r2.status, r2.body.message], [400, 'Invalid or expired requestState'])
})
