import t from 'tap'
import { Type } from '@sinclair/typebox'
import { z } from 'zod'
import { createHash } from 'node:crypto'
import { McpServer } from '../../src/core/mcp-server.js'
import { elicit } from '../../src/mrtr/questions.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import { build, call } from '../helpers/helper.js'

const post = (url: string, body: unknown) => ({
  method: 'POST' as const,
  url,
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' }
})

/** The same tool twice: arguments and output in TypeBox, and in zod. */
function twins(): McpServer {
  const mcp = new McpServer({ name: 'twins', version: '1' })
  mcp.tool(
    {
      name: 'box',
      input: Type.Object({ a: Type.Number(), b: Type.Number(), unit: Type.Optional(Type.Unsafe<'m' | 'km'>({ type: 'string', enum: ['m', 'km'] })) }),
      output: Type.Object({ sum: Type.Number() })
    },
    ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } })
  )
  mcp.tool(
    {
      name: 'zod',
      description: 'adds, with zod',
      input: z.object({ a: z.number(), b: z.number(), unit: z.enum(['m', 'km']).optional() }),
      output: z.object({ sum: z.number(), unit: z.string().default('m') })
    },
    ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } })
  )
  mcp.tool(
    { name: 'refined', input: z.object({ code: z.string().refine((s) => s.startsWith('X-'), 'must start with X-'), n: z.number().default(1) }) },
    ({ code, n }) => `${code}:${n}`
  )
  mcp.tool({ name: 'later', input: z.object({ id: z.string().refine(async () => true) }) }, ({ id }) => id)
  mcp.tool({ name: 'liar', output: z.object({ n: z.number().int() }) }, () => ({ content: [], structuredContent: { n: 1.5 } }))
  return mcp
}

t.test('a zod tool is listed with the JSON Schema zod produces, in the OpenAPI document too', async (t) => {
  const { app } = await build(t, { mcp: twins() })
  const { tools } = (await call(app, { url: '/tools' })).body
  const tool = tools.find((x: { name: string }) => x.name === 'zod')
  t.same(tool.inputSchema, {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { a: { type: 'number' }, b: { type: 'number' }, unit: { type: 'string', enum: ['m', 'km'] } },
    required: ['a', 'b']
  })
  t.match(tool.outputSchema, { type: 'object', properties: { sum: { type: 'number' }, unit: { type: 'string', default: 'm' } } })
  const doc = (await call(app, { url: '/openapi.json' })).body
  const body = doc.paths['/tools/zod/calls'].post.requestBody.content['application/json'].schema
  t.same(body.properties.arguments, tool.inputSchema, 'the operation takes the zod schema as its arguments')
})

t.test('a zod tool is called and validated like a TypeBox one: same status, same error shape', async (t) => {
  const { app } = await build(t, { mcp: twins() })
  const ok = await call(app, post('/tools/zod/calls', { arguments: { a: 2, b: 40 } }))
  t.same(ok.body, { content: [{ type: 'text', text: '42' }], structuredContent: { sum: 42, unit: 'm' }, resultType: 'complete' })
  const cases = [{ a: 1 }, { a: 1, b: 'two' }, { a: 1, b: 2, unit: 'mi' }, {}]
  for (const args of cases) {
    const box = await call(app, post('/tools/box/calls', { arguments: args }))
    const zod = await call(app, post('/tools/zod/calls', { arguments: args }))
    t.equal(zod.status, box.status, JSON.stringify(args))
    t.same(zod.body, JSON.parse(JSON.stringify(box.body).replace('tool box', 'tool zod')), JSON.stringify(args))
    t.equal(zod.body.isError, true, 'SEP-1303: invalid arguments are a tool error')
  }
  t.equal((await call(app, post('/tools/zod/calls', { arguments: { a: 1 } }))).body.content[0].text, 'Invalid arguments for tool zod: b is required')
})

t.test("what JSON Schema cannot say is still checked, by the library's own validate", async (t) => {
  const { app } = await build(t, { mcp: twins() })
  const ok = await call(app, post('/tools/refined/calls', { arguments: { code: 'X-1' } }))
  t.same(ok.body.content, [{ type: 'text', text: 'X-1:1' }], 'the default from the JSON Schema reached the handler')
  const refused = await call(app, post('/tools/refined/calls', { arguments: { code: 'Y-1' } }))
  t.equal(refused.status, 200)
  t.same(refused.body, { content: [{ type: 'text', text: 'Invalid arguments for tool refined: code must start with X-' }], isError: true, resultType: 'complete' })
  const later = await call(app, post('/tools/later/calls', { arguments: { id: 'a' } }))
  t.equal(later.body.content[0].text, 'Invalid arguments for tool later: (root) needs asynchronous validation, which this server does not run')
  const liar = await call(app, post('/tools/liar/calls', {}))
  t.match(liar.body.message, /n must be integer/)
})

t.test('any library that implements Standard JSON Schema is taken, not only zod', async (t) => {
  // A hand-written one: a library's issues may name path segments as `{ key }` objects.
  const even = {
    '~standard': {
      version: 1 as const,
      vendor: 'hand',
      types: undefined as unknown as { input: { n: number }; output: { n: number } },
      validate: (value: unknown) => ((value as { n: number }).n % 2 === 0 ? { value } : { issues: [{ message: 'must be even', path: [{ key: 'n' }] }] }),
      jsonSchema: { input: () => ({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }), output: () => ({}) }
    }
  }
  const mcp = new McpServer({ name: 'hand', version: '1' })
  mcp.tool({ name: 'half', input: even }, ({ n }) => String(n / 2))
  const { app } = await build(t, { mcp })
  t.same((await call(app, post('/tools/half/calls', { arguments: { n: 8 } }))).body.content, [{ type: 'text', text: '4' }])
  t.equal((await call(app, post('/tools/half/calls', { arguments: { n: 7 } }))).body.content[0].text, 'Invalid arguments for tool half: n must be even')
  t.equal((await call(app, post('/tools/half/calls', { arguments: { n: 'x' } }))).body.content[0].text, 'Invalid arguments for tool half: n must be integer')
})

t.test('a zod state schema checks the state a hand-rolled prompt carries between rounds', async (t) => {
  const mcp = new McpServer({ name: 'state', version: '1' })
  mcp.prompt({ name: 'steps', state: z.object({ step: z.number().int() }) }, (_args, ctx) => {
    if (ctx.requestState === undefined) return inputRequired({ state: { step: 1 } })
    return `step ${ctx.requestState.step + 1}`
  })
  const { app } = await build(t, { mcp })
  const first = (await call(app, { url: '/prompts/steps' })).body
  t.equal(first.resultType, 'input_required')
  const second = await call(app, post('/prompts/steps', { requestState: first.requestState }))
  t.equal(second.body.messages?.[0].content.text, 'step 2', JSON.stringify(second.body))
})

t.test('schemas that cannot be checked through JSON Schema are refused at registration', async (t) => {
  const mcp = new McpServer({ name: 'refusals', version: '1' })
  t.throws(() => mcp.tool({ name: 'a', input: z.object({ s: z.string().transform((s) => s.length) }) }, () => ''), /Tool "a" input: the zod schema has no JSON Schema \(Transforms cannot/)
  t.throws(() => mcp.tool({ name: 'b', input: z.object({ d: z.date() }) }, () => ''), /Date cannot be represented/)
  t.throws(() => mcp.tool({ name: 'c', input: z.string() as never }, () => ''), /input must be an object schema/)
  t.throws(() => mcp.tool({ name: 'd', output: z.array(z.string()) as never }, () => ''), /output must be an object schema/)
  const validateOnly = { '~standard': { version: 1, vendor: 'x', validate: (value: unknown) => ({ value }) } }
  t.throws(() => mcp.tool({ name: 'e', input: validateOnly as never }, () => ''), /a Standard Schema without Standard JSON Schema/)
  t.equal(mcp.tools.size, 0)
})

t.test('prompt arguments from one object schema: listed from it, checked by it, completed by name', async (t) => {
  const mcp = new McpServer({ name: 'prompts', version: '1' })
  mcp.prompt(
    {
      name: 'review',
      description: 'Review code',
      arguments: z.object({
        code: z.string().describe('The code to review').meta({ title: 'Code' }),
        tone: z.enum(['kind', 'blunt']).optional(),
        ticket: z.string().refine((s) => s.startsWith('T-'), 'must start with T-').optional()
      }),
      complete: { tone: (value) => ['kind', 'blunt'].filter((v) => v.startsWith(value)), ticket: undefined }
    },
    ({ code, tone }) => `Review ${code} (${tone ?? 'kind'})`
  )
  mcp.prompt({ name: 'boxed', arguments: Type.Object({ who: Type.String({ description: 'Who' }) }) }, ({ who }) => `Hello ${who}`)
  const { app } = await build(t, { mcp })
  const { prompts } = (await call(app, { url: '/prompts' })).body
  t.same(prompts.find((p: { name: string }) => p.name === 'review').arguments, [
    { name: 'code', title: 'Code', description: 'The code to review', required: true },
    { name: 'tone', required: false },
    { name: 'ticket', required: false }
  ])
  t.same(prompts.find((p: { name: string }) => p.name === 'boxed').arguments, [{ name: 'who', description: 'Who', required: true }], 'TypeBox too')
  const ok = await call(app, post('/prompts/review', { arguments: { code: 'x = 1', tone: 'blunt' } }))
  t.same(ok.body.messages, [{ role: 'user', content: { type: 'text', text: 'Review x = 1 (blunt)' } }])
  const missing = await call(app, post('/prompts/review', { arguments: {} }))
  t.same([missing.status, missing.body.message], [400, 'Missing required argument for prompt review: code'])
  const wrong = await call(app, post('/prompts/review', { arguments: { code: 'x', tone: 'rude' } }))
  t.same([wrong.status, wrong.body.code, wrong.body.message], [400, -32602, 'Invalid arguments for prompt review: tone must be one of ["kind","blunt"]'])
  const refined = await call(app, post('/prompts/review', { arguments: { code: 'x', ticket: 'X-1' } }))
  t.same([refined.status, refined.body.message, refined.body.data], [400, 'Invalid arguments for prompt review: ticket must start with T-', { path: '/ticket' }])
  t.same((await call(app, post('/prompts/boxed', { arguments: { who: 'Ada' } }))).body.messages[0].content.text, 'Hello Ada')
  const completed = await call(app, post('/completions', { ref: { type: 'ref/prompt', name: 'review' }, argument: { name: 'tone', value: 'b' } }))
  t.same(completed.body.completion.values, ['blunt'])
})

t.test('prompt argument schemas that cannot be arguments are refused at registration', async (t) => {
  const mcp = new McpServer({ name: 'refusals', version: '1' })
  t.throws(() => mcp.prompt({ name: 'a', arguments: z.string() }, () => ''), /Prompt "a": arguments must be an object schema/)
  t.throws(() => mcp.prompt({ name: 'b', arguments: z.object({ n: z.number() }) }, () => ''), /Prompt "b": argument "n" must be a string schema \(prompt arguments are strings\)/)
  t.throws(() => mcp.prompt({ name: 'c', arguments: z.object({ s: z.string() }), complete: { t: () => [] } as never }, () => ''), /Prompt "c": a completer for "t", which is no argument/)
  t.equal(mcp.prompts.size, 0)
  // A library whose object schema names no properties: a prompt without arguments.
  const none = { '~standard': { version: 1 as const, vendor: 'hand', validate: (value: unknown) => ({ value }), jsonSchema: { input: () => ({ type: 'object' }), output: () => ({}) } } }
  mcp.prompt({ name: 'd', arguments: none }, () => 'none')
  t.notOk('arguments' in mcp.prompts.get('d')!.definition)
})

t.test('ctx.elicit and elicit() take a zod object: converted once, to the form MCP asks for', async (t) => {
  const Form = z.object({ city: z.string().min(2).describe('City'), nights: z.number().int().optional() })
  const first = elicit('Where?', Form)
  t.same(first.request.params, { mode: 'form', message: 'Where?', requestedSchema: { type: 'object', properties: { city: { type: 'string', minLength: 2, description: 'City' }, nights: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 } }, required: ['city'] } })
  t.equal(elicit('Again?', Form).request.params!.requestedSchema, first.request.params!.requestedSchema, 'the same schema object: converted once')
  const optional = { '~standard': { version: 1 as const, vendor: 'hand', validate: (value: unknown) => ({ value }), jsonSchema: { input: () => ({ type: 'object' }), output: () => ({}) } } }
  t.same(elicit('Anything?', optional).request.params!.requestedSchema, { type: 'object', properties: {} }, 'no properties, nothing required')
  t.throws(() => elicit('No', z.string()), /elicit: the requested schema must be an object schema/)

  const mcp = new McpServer({ name: 'ask', version: '1' })
  mcp.tool({ name: 'book' }, async (_args, ctx) => {
    const answer = await ctx.elicit('Where?', Form)
    return answer.action === 'accept' ? `${answer.content.city} for ${answer.content.nights ?? 1}` : answer.action
  })
  const { app } = await build(t, { mcp })
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }
  const asked = await call(app, post('/tools/book/calls', { _meta: meta }))
  const [key] = Object.keys(asked.body.inputRequests)
  t.same(asked.body.inputRequests[key!].params.requestedSchema, first.request.params!.requestedSchema)
  const retry = (content: unknown) => call(app, post('/tools/book/calls', { _meta: meta, requestState: asked.body.requestState, inputResponses: { [key!]: { action: 'accept', content } } }))
  t.same((await retry({ city: 'Oslo', nights: 2 })).body.content, [{ type: 'text', text: 'Oslo for 2' }])
  t.match((await retry({ city: 'O' })).body, { code: -32602, message: /city must NOT have fewer than 2 characters/ })
})

// Compile-time checks, run by `npm run typecheck` (never called): handler arguments, structured
// output and state are inferred from zod as from TypeBox; each @ts-expect-error fails the
// typecheck when inference breaks (an `any` accepts everything).
export function inferred(mcp: McpServer): void {
  mcp.tool({ name: 't1', input: z.object({ a: z.number(), tags: z.array(z.string()).optional(), n: z.number().default(1) }) }, (args) => {
    const a: number = args.a
    const tags: string[] | undefined = args.tags
    const n: number = args.n
    // @ts-expect-error a is a number
    const wrong: string = args.a
    // @ts-expect-error no such argument
    void args.nope
    return String([a, tags, n, wrong])
  })
  // @ts-expect-error structuredContent must match the zod output schema
  mcp.tool({ name: 't2', output: z.object({ sum: z.number() }) }, () => ({ content: [], structuredContent: { sum: 'x' } }))
  mcp.prompt({ name: 't4', arguments: z.object({ code: z.string(), tone: z.enum(['kind', 'blunt']).optional() }), complete: { tone: () => [] } }, (args) => {
    const code: string = args.code
    const tone: 'kind' | 'blunt' | undefined = args.tone
    // @ts-expect-error tone may be missing
    const sure: string = args.tone
    // @ts-expect-error no such argument
    void args.nope
    return [code, tone, sure].join()
  })
  // @ts-expect-error a completer for an argument the schema does not have
  mcp.prompt({ name: 't5', arguments: z.object({ code: z.string() }), complete: { nope: () => [] } }, () => '')
  mcp.tool({ name: 't6' }, async (_args, ctx) => {
    const answer = await ctx.elicit('Where?', z.object({ city: z.string() }))
    // @ts-expect-error city is a string
    const n: number = answer.action === 'accept' ? answer.content.city : 0
    return String(n)
  })
  mcp.prompt({ name: 't3', state: z.object({ step: z.number() }) }, (_args, ctx) => {
    // @ts-expect-error step is a number
    const step: string | undefined = ctx.requestState?.step
    return String(step)
  })
}

t.test('a form\'s digest is the sha256 of its request\'s JSON, kept per schema object and message', async (t) => {
  const sha = (request: unknown) => createHash('sha256').update(JSON.stringify(request)).digest('base64url')
  const Form = Type.Object({ resolution: Type.String() })
  const first = elicit('Resolution?', Form)
  t.equal(first.digest, sha(first.request), 'the digest of the text the client is sent')
  t.equal(elicit('Resolution?', Form).digest, first.digest, 'the same form asked again')
  const other = elicit('Why?', Form)
  t.not(other.digest, first.digest, 'another message is another question')
  t.equal(other.digest, sha(other.request))
  const zod = elicit('Resolution?', z.object({ resolution: z.string() }))
  t.equal(zod.digest, sha(zod.request), 'a library schema too')
  for (let i = 0; i < 100; i++) elicit(`Item ${i}?`, Form)
  const late = elicit('Item 3?', Form)
  t.equal(late.digest, sha(late.request), 'past 64 messages a form starts again, and stays right')
})
