import t from 'tap'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { McpServer } from '../../src/core/mcp-server.js'
import { encodeJsonHeader } from '../../src/headers.js'
import { elicit, elicitUrl, sample } from '../../src/mrtr/questions.js'
import { full, resolver } from '../../src/mrtr/resolvers.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import { build, call } from '../helpers/helper.js'

const ELICIT = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, roots: {} } }
const Name = Type.Object({ name: Type.String() })
const accept = (content: unknown) => ({ action: 'accept', content })

async function run(app: FastifyInstance, tool: string, args: unknown, rounds: Record<string, unknown>[]) {
  const seen: string[][] = []
  let res = await call(app, { method: 'POST', url: `/tools/${tool}/calls`, payload: { _meta: ELICIT, arguments: args } })
  for (const answers of rounds) {
    seen.push(Object.keys(res.body.inputRequests ?? {}).sort())
    res = await call(app, {
      method: 'POST',
      url: `/tools/${tool}/calls`,
      payload: { _meta: ELICIT, arguments: args, requestState: res.body.requestState, inputResponses: answers }
    })
  }
  return { seen, res }
}

t.test('registration checks the resolver graph', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  const a = resolver({ name: 'a', resolve: () => 1 })
  const b = resolver({ name: 'b', needs: { a }, resolve: (_x, { a }) => a + 1 })
  ;(a.needs as Record<string, unknown>).b = b // only mutation can make a cycle
  t.throws(() => mcp.tool({ name: 'cyclic', resolvers: { b } }, () => ''), /resolver cycle b -> a -> b/)
  const reads = resolver({ name: 'reads', args: ['nope'], resolve: () => 1 })
  t.throws(() => mcp.tool({ name: 'args', input: Type.Object({ yes: Type.String() }), resolvers: { reads } }, () => ''), /reads unknown argument "nope"/)
  t.throws(() => mcp.tool({ name: 'notone', resolvers: { x: (() => 1) as never } }, () => ''), /"x" of Tool "notone" is not a resolver/)
  const inner = resolver({ name: 'inner', needs: { bad: 5 as never }, resolve: () => 1 })
  t.throws(() => mcp.tool({ name: 'notone2', resolvers: { inner } }, () => ''), /"bad" of resolver "inner" is not a resolver/)
  const twin1 = resolver({ name: 'twin', resolve: () => 1 })
  const twin2 = resolver({ name: 'twin', resolve: () => 2 })
  t.throws(() => mcp.tool({ name: 'twins', resolvers: { twin1, twin2 } }, () => ''), /two different resolvers are named "twin"/)
  t.throws(() => mcp.tool({ name: 'mixed', state: Type.Object({}), resolvers: { twin1 } }, () => ''), /cannot be mixed/)
  t.throws(() => resolver({ name: 'bad name', resolve: () => 1 }), /Resolver name/)
  t.throws(() => mcp.prompt({ name: 'p', arguments: { x: {} }, resolvers: { reads } }, () => ''), /Prompt "p": resolver "reads" reads unknown argument "nope"/)
  const odd = resolver({ name: 'odd', needs: { x: { full: 5 } as never }, resolve: () => 1 })
  t.throws(() => mcp.tool({ name: 'odd', resolvers: { odd } }, () => ''), /"x" of resolver "odd" is not a resolver/)
  const open = resolver({ name: 'open', args: ['anything'], resolve: () => 1 })
  t.throws(() => mcp.tool({ name: 'raw', input: Type.Unsafe<{}>({ type: 'object' }), resolvers: { open } }, () => ''), /unknown argument "anything"/, 'a schema without properties has no arguments to read')
  const shared = resolver({ name: 'shared', resolve: () => 1 })
  const left = resolver({ name: 'left', needs: { shared }, resolve: () => 1 })
  const right = resolver({ name: 'right', needs: { shared, full: full(shared) }, resolve: () => 1 })
  t.doesNotThrow(() => mcp.tool({ name: 'diamond', resolvers: { left, right } }, () => ''), 'a diamond is not a cycle')
})

t.test('independent questions share a round; a dependent one waits; each is asked once', async (t) => {
  const asks: string[] = []
  const first = resolver({ name: 'first', resolve: () => ((asks.push('first'), elicit('First name?', Name))) })
  const last = resolver({ name: 'last', resolve: () => ((asks.push('last'), elicit('Last name?', Name))) })
  const nick = resolver({
    name: 'nick',
    needs: { first },
    resolve: (_a, { first }) => ((asks.push('nick'), elicit(`A nickname for ${first.name}?`, Name)))
  })
  const plain = resolver({ name: 'plain', args: ['greeting'], resolve: (a: { greeting: string }, _n, ctx) => `${a.greeting} (${ctx.requestId.length > 0})` })
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'names', input: Type.Object({ greeting: Type.String() }), resolvers: { first, last, nick, plain } }, (_args, ctx) => {
    const r = ctx.resolved
    return `${r.plain} ${r.first.name} "${r.nick.name}" ${r.last.name}`
  })
  const { app } = await build(t, { mcp })
  const { seen, res } = await run(app, 'names', { greeting: 'Hello' }, [
    { first: accept({ name: 'Ada' }), last: accept({ name: 'Lovelace' }) },
    { nick: accept({ name: 'Enchantress' }) }
  ])
  t.same(seen, [['first', 'last'], ['nick']])
  t.equal(res.body.content[0].text, 'Hello (true) Ada "Enchantress" Lovelace')
  t.same(asks, ['first', 'last', 'first', 'last', 'nick', 'first', 'last', 'nick'], 'resolver bodies re-run; recorded answers satisfy them')
})

t.test('a changed question is asked again', async (t) => {
  let wording = 'v1'
  const q = resolver({ name: 'q', resolve: () => elicit(`Question ${wording}`, Name) })
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'ask', resolvers: { q } }, (_a, ctx) => ctx.resolved.q.name)
  const { app } = await build(t, { mcp })
  const r1 = await call(app, { method: 'POST', url: '/tools/ask/calls', payload: { _meta: ELICIT } })
  wording = 'v2' // the code changed between rounds (say, a deploy)
  const r2 = await call(app, {
    method: 'POST',
    url: '/tools/ask/calls',
    payload: { _meta: ELICIT, requestState: r1.body.requestState, inputResponses: { q: accept({ name: 'old answer' }) } }
  })
  t.equal(r2.body.resultType, 'input_required', 'an answer to the old wording does not answer the new one')
  t.equal(r2.body.inputRequests.q.params.message, 'Question v2')
  const r3 = await call(app, {
    method: 'POST',
    url: '/tools/ask/calls',
    payload: { _meta: ELICIT, requestState: r2.body.requestState, inputResponses: { q: accept({ name: 'new answer' }) } }
  })
  t.equal(r3.body.content[0].text, 'new answer')
})

t.test('decline and cancel abort with a tool error, unless the consumer asks for the full outcome', async (t) => {
  const consent = resolver({ name: 'consent', resolve: () => elicit('Proceed?', Type.Object({ ok: Type.Boolean() })) })
  const after = resolver({ name: 'after', needs: { consent }, resolve: (_a, { consent }) => consent.ok })
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'strict', resolvers: { after } }, (_a, ctx) => `ok=${ctx.resolved.after}`)
  mcp.tool({ name: 'lenient', resolvers: { consent: full(consent) } }, (_a, ctx) => {
    const o = ctx.resolved.consent
    return o.action === 'accept' ? `accepted ${o.content.ok}` : `the user chose ${o.action}`
  })
  mcp.prompt({ name: 'p', resolvers: { consent } }, (_a, ctx) => `ok=${ctx.resolved.consent.ok}`)
  mcp.resource({ uri: 'x:consent', name: 'c', resolvers: { consent } }, (_u, ctx) => `ok=${ctx.resolved.consent.ok}`)
  const llm = resolver({ name: 'llm', resolve: () => sample({ messages: [{ role: 'user', content: { type: 'text', text: '2+2?' } }], maxTokens: 3 }) })
  mcp.tool({ name: 'sampled', resolvers: { llm } }, (_a, ctx) => `model ${ctx.resolved.llm.model} said ${JSON.stringify(ctx.resolved.llm.content)}`)
  const signIn = resolver({ name: 'sign_in', resolve: () => elicitUrl('Sign in first', 'https://example.com/auth', 'auth-1') })
  mcp.tool({ name: 'linked', resolvers: { signIn } }, (_a, ctx) => `signed in: ${ctx.resolved.signIn}`)
  const optional = resolver({ name: 'optional', resolve: () => elicit('Anything to add?', Type.Object({ note: Type.Optional(Type.String()) })) })
  mcp.tool({ name: 'optional', resolvers: { optional } }, (_a, ctx) => JSON.stringify(ctx.resolved.optional))
  const { app } = await build(t, { mcp })
  for (const action of ['decline', 'cancel']) {
    const strict = await run(app, 'strict', {}, [{ consent: { action } }])
    t.same(strict.res.body, { content: [{ type: 'text', text: `The user chose to ${action} "consent"` }], isError: true, resultType: 'complete' })
    const lenient = await run(app, 'lenient', {}, [{ consent: { action } }])
    t.equal(lenient.res.body.content[0].text, `the user chose ${action}`)
  }
  const yes = await run(app, 'strict', {}, [{ consent: accept({ ok: true }) }])
  t.equal(yes.res.body.content[0].text, 'ok=true')
  const fullYes = await run(app, 'lenient', {}, [{ consent: accept({ ok: false }) }])
  t.equal(fullYes.res.body.content[0].text, 'accepted false')
  const p1 = await call(app, { url: '/prompts/p', headers: { 'mcp-meta': encodeJsonHeader(ELICIT) } })
  const p2 = await call(app, {
    url: '/prompts/p',
    headers: { 'mcp-meta': encodeJsonHeader(ELICIT), 'mcp-request-state': p1.body.requestState, 'mcp-input-responses': '{"consent":{"action":"decline"}}' }
  })
  t.same([p2.status, p2.body], [400, { code: -32602, message: 'The user chose to decline "consent"' }], 'outside a tool, a decline is an error')
  const r1 = await call(app, { url: '/resources/x%3Aconsent', headers: { 'mcp-meta': encodeJsonHeader(ELICIT) } })
  const r2 = await call(app, {
    url: '/resources/x%3Aconsent',
    headers: { 'mcp-meta': encodeJsonHeader(ELICIT), 'mcp-request-state': r1.body.requestState, 'mcp-input-responses': '{"consent":{"action":"cancel"}}' }
  })
  t.same([r2.status, r2.body.message], [400, 'The user chose to cancel "consent"'])
  const linked = await call(app, {
    method: 'POST',
    url: '/tools/linked/calls',
    payload: { _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } } }
  })
  t.equal(linked.body.inputRequests.sign_in.params.mode, 'url')
  const signedIn = await call(app, {
    method: 'POST',
    url: '/tools/linked/calls',
    payload: {
      _meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } },
      requestState: linked.body.requestState,
      inputResponses: { sign_in: { action: 'accept' } }
    }
  })
  t.equal(signedIn.body.content[0].text, 'signed in: true', 'an accepted URL elicitation resolves to true')
  const samplingCaps = { _meta: { 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } } }
  const s1 = await call(app, { method: 'POST', url: '/tools/sampled/calls', payload: samplingCaps })
  const s2 = await call(app, {
    method: 'POST',
    url: '/tools/sampled/calls',
    payload: { ...samplingCaps, requestState: s1.body.requestState, inputResponses: { llm: { role: 'assistant', content: { type: 'text', text: '4' }, model: 'm' } } }
  })
  t.equal(s2.body.content[0].text, 'model m said {"type":"text","text":"4"}', 'a sampling answer resolves to the message')
  const bare = await run(app, 'optional', {}, [{ optional: { action: 'accept' } }])
  t.equal(bare.res.body.content[0].text, '{}', 'an accepted form with no content resolves to {}')
})

t.test('an async resolver: its value and its question are awaited, its rejection fails the call', async (t) => {
  const later = <T>(v: T) => new Promise<T>((resolve) => setImmediate(() => resolve(v)))
  const city = resolver({ name: 'city', resolve: () => later('Paris') })
  const name = resolver({ name: 'name', needs: { city }, resolve: async (_a, { city }) => elicit(`Your name, in ${await later(city)}?`, Name) })
  const down = resolver({ name: 'down', resolve: () => Promise.reject(new Error('directory down')) })
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'greet', resolvers: { city, name } }, (_args, ctx) => `${ctx.resolved.name.name} of ${ctx.resolved.city}`)
  mcp.tool({ name: 'down', resolvers: { down } }, () => 'never')
  const { app } = await build(t, { mcp })
  const first = await call(app, { method: 'POST', url: '/tools/greet/calls', payload: { _meta: ELICIT, arguments: {} } })
  t.equal(first.body.inputRequests?.name?.params?.message, 'Your name, in Paris?', 'asked with the awaited value')
  const { seen, res } = await run(app, 'greet', {}, [{ name: accept({ name: 'Ada' }) }])
  t.same(seen, [['name']])
  t.equal(res.body.content[0].text, 'Ada of Paris')
  const failed = await call(app, { method: 'POST', url: '/tools/down/calls', payload: {} })
  t.same(failed.body, { content: [{ type: 'text', text: 'directory down' }], isError: true, resultType: 'complete' })
})

t.test('a resolver that throws fails the call like its handler would; mixing at run time is a 500', async (t) => {
  const boom = resolver({
    name: 'boom',
    resolve: () => {
      throw new Error('lookup failed')
    }
  })
  const fine = resolver({ name: 'fine', resolve: () => 1 })
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'boom', resolvers: { boom } }, () => 'never')
  mcp.tool({ name: 'sneaky', resolvers: { fine } }, () => inputRequired({ state: 1 }) as never)
  mcp.resource({ uri: 'x:boom', name: 'b', resolvers: { boom } }, () => 'never')
  mcp.prompt({ name: 'sneaky', resolvers: { fine } }, () => inputRequired({ state: 1 }) as never)
  const { app } = await build(t, { mcp })
  const tool = await call(app, { method: 'POST', url: '/tools/boom/calls', payload: {} })
  t.same(tool.body, { content: [{ type: 'text', text: 'lookup failed' }], isError: true, resultType: 'complete' })
  const sneaky = await call(app, { method: 'POST', url: '/tools/sneaky/calls', payload: {} })
  t.same([sneaky.status, sneaky.body.code], [500, -32603])
  const prompt = await call(app, { url: '/prompts/sneaky' })
  t.same([prompt.status, prompt.body], [500, { code: -32603, message: 'Internal error' }])
  const resource = await call(app, { url: '/resources/x%3Aboom' })
  t.same([resource.status, resource.body], [500, { code: -32603, message: 'Internal error' }])
})

t.test('demo: update_work_item, the SEP-2322 example, round by round', async (t) => {
  const { app } = await build(t)
  const args = { workItemId: 4522, fields: { 'System.State': 'Resolved' } }
  const dup = await run(app, 'update_work_item', args, [
    { resolution: accept({ resolution: 'Duplicate' }) },
    { duplicate_of: accept({ duplicateOfId: 4301 }) }
  ])
  t.same(dup.seen, [['resolution'], ['duplicate_of']])
  t.equal(dup.res.body.content[0].text, 'Bug #4522 resolved as Duplicate of Bug #4301. State set to Resolved and duplicate link created.')
  const fixed = await run(app, 'update_work_item', args, [{ resolution: accept({ resolution: 'Fixed' }) }])
  t.equal(fixed.res.body.content[0].text, 'Bug #4522 resolved as Fixed. State set to Resolved.')
  const active = await run(app, 'update_work_item', { workItemId: 7, fields: { 'System.State': 'Active' } }, [])
  t.equal(active.res.body.content[0].text, 'Bug #7 updated. State set to Active.', 'no rule fires, nothing is asked')
  const invalid = await run(app, 'update_work_item', args, [{ resolution: accept({ resolution: 'Lost' }) }])
  t.same([invalid.res.status, invalid.res.body.code], [400, -32602])
  t.match(invalid.res.body.message, /content\.resolution must be one of \["Fixed","Won't Fix","Duplicate","By Design"\]/)
})

t.test('demo: get_weather asks for a missing location; the prompt and the resource ask too', async (t) => {
  const { app } = await build(t)
  const direct = await run(app, 'get_weather', { location: 'Oslo' }, [])
  const asked = await run(app, 'get_weather', {}, [{ location: accept({ location: 'Oslo' }) }])
  t.same(asked.seen, [['location']])
  t.equal(asked.res.body.content[0].text, direct.res.body.content[0].text)
  const meta = { 'mcp-meta': encodeJsonHeader(ELICIT) }
  const p1 = await call(app, { url: '/prompts/code_review', headers: { ...meta, 'mcp-arguments': '{"code":"x = 1"}' } })
  t.same(p1.body.inputRequests.tone.params.requestedSchema.properties.tone.enum, ['kind', 'blunt'])
  const p2 = await call(app, {
    url: '/prompts/code_review',
    headers: { ...meta, 'mcp-arguments': '{"code":"x = 1"}', 'mcp-request-state': p1.body.requestState, 'mcp-input-responses': '{"tone":{"action":"accept","content":{"tone":"kind"}}}' }
  })
  t.equal(p2.body.messages[0].content.text, 'Review this code in a kind tone:\n\nx = 1')
  const r1 = await call(app, { url: '/resources/demo%3A%2F%2Froots', headers: meta })
  const r2 = await call(app, {
    url: '/resources/demo%3A%2F%2Froots',
    headers: { ...meta, 'mcp-request-state': r1.body.requestState, 'mcp-input-responses': '{"roots":{"roots":[{"uri":"file:///src"}]}}' }
  })
  t.same(JSON.parse(r2.body.contents[0].text), [{ uri: 'file:///src' }])
  t.equal(r2.headers.etag, undefined, 'a result that depended on answers is not cacheable')
  t.match((await call(app, { url: '/resources/demo%3A%2F%2Freadme' })).headers.etag, /^"/, 'a plain read is')
})

t.test('answers sent before any question: taken when they fit the question asked now, else asked', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  const first = resolver({ name: 'first', resolve: () => elicit('First name?', Name) })
  const last = resolver({ name: 'last', resolve: () => elicit('Last name?', Name) })
  mcp.tool({ name: 'names', resolvers: { first, last } }, (_a, ctx) => `${ctx.resolved.first.name} ${ctx.resolved.last.name}`)
  mcp.tool({ name: 'inline' }, async (_a, ctx) => {
    const got = await ctx.elicit('Name?', Name)
    return got.action === 'accept' ? `hi ${got.content.name}` : got.action
  })
  const { app } = await build(t, { mcp })
  const post = (tool: string, payload: Record<string, unknown>) =>
    call(app, { method: 'POST', url: `/tools/${tool}/calls`, payload: { _meta: ELICIT, arguments: {}, ...payload } })

  const both = await post('names', { inputResponses: { first: accept({ name: 'Ada' }), last: accept({ name: 'Lovelace' }), extra: { action: 'accept', content: { x: 1 } } } })
  t.same(both.body.content, [{ type: 'text', text: 'Ada Lovelace' }], 'fitting answers complete the call; the unknown key is ignored')

  const one = await post('names', { inputResponses: { first: accept({ name: 'Ada' }), last: accept({ nom: 'L' }) } })
  t.equal(one.body.resultType, 'input_required')
  t.same(Object.keys(one.body.inputRequests), ['last'], 'the answer that does not fit its question is asked again, the other kept')
  const done = await post('names', { requestState: one.body.requestState, inputResponses: { last: accept({ name: 'Byron' }) } })
  t.same(done.body.content, [{ type: 'text', text: 'Ada Byron' }], 'the kept answer travelled in the sealed state')

  const inline = await post('inline', { inputResponses: { 'ask.0': accept({ name: 'Grace' }) } })
  t.same(inline.body.content, [{ type: 'text', text: 'hi Grace' }], 'ctx.elicit takes a fitting answer sent with the call')

  const stale = await post('names', { requestState: one.body.requestState, inputResponses: { first: accept({ name: 'Eve' }), last: accept({ name: 'Byron' }) } })
  t.same(stale.body.content, [{ type: 'text', text: 'Ada Byron' }], 'with a state, only questions it asked are answered: the recorded answer stands')
})

t.test('a question is known by its JSON as the code builds it: the same text is answered, a reordered one asked again', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  // The same form with its keys in another order, as another version of the code might build it.
  const inOrder = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
  const reordered = { required: ['name'], properties: { name: { type: 'string' } }, type: 'object' }
  let form: Record<string, unknown> = inOrder
  const who = resolver({ name: 'who', resolve: () => elicit('Name?', Type.Unsafe<{ name: string }>(form)) })
  mcp.tool({ name: 'greet', resolvers: { who } }, (_args, ctx) => `hello ${ctx.resolved.who.name}`)
  const { app } = await build(t, { mcp })
  const same = await run(app, 'greet', {}, [{ who: accept({ name: 'Ada' }) }])
  t.same(same.res.body.content, [{ type: 'text', text: 'hello Ada' }], 'the question as asked: its answer is used')
  const first = await call(app, { method: 'POST', url: '/tools/greet/calls', payload: { _meta: ELICIT, arguments: {} } })
  form = reordered
  const retried = await call(app, {
    method: 'POST',
    url: '/tools/greet/calls',
    payload: { _meta: ELICIT, arguments: {}, requestState: first.body.requestState, inputResponses: { who: accept({ name: 'Ada' }) } }
  })
  t.equal(retried.body.resultType, 'input_required', 'the reordered question is asked again, never answered with the old answer')
  t.same(Object.keys(retried.body.inputRequests), ['who'])
})
