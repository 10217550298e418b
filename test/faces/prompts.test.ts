import t from 'tap'
import { build, call } from '../helpers/helper.js'

const b64 = (v: unknown) => `=?base64?${Buffer.from(JSON.stringify(v), 'utf8').toString('base64')}?=`

t.test('GET /prompts lists prompts with their arguments and an ETag', async (t) => {
  const { app } = await build(t)
  const res = await call(app, { url: '/prompts' })
  t.equal(res.status, 200)
  t.same(res.body.prompts.map((p: { name: string }) => p.name), ['greeting', 'code_review'])
  t.same(res.body.prompts.slice(0, 1), [
    {
      name: 'greeting',
      title: 'Greeting',
      description: 'A friendly greeting for someone.',
      arguments: [{ name: 'name', description: 'Who to greet.', required: true }]
    }
  ])
  const nm = await app.inject({ url: '/prompts', headers: { 'if-none-match': res.headers.etag as string } })
  t.equal(nm.statusCode, 304)
})

t.test('GET /prompts/{name} takes arguments from Mcp-Arguments, plain or base64', async (t) => {
  const { app } = await build(t)
  const plain = await call(app, { url: '/prompts/greeting', headers: { 'mcp-arguments': '{"name":"Ada"}' } })
  t.equal(plain.status, 200)
  t.same(plain.body, {
    messages: [{ role: 'user', content: { type: 'text', text: 'Please write a short, warm greeting for Ada.' } }],
    description: 'A friendly greeting for someone.',
    resultType: 'complete'
  })
  const encoded = await call(app, { url: '/prompts/greeting', headers: { 'mcp-arguments': b64({ name: 'Zoë 日本' }) } })
  t.match(encoded.body.messages[0].content.text, /for Zoë 日本\./)
  const url = await call(app, {
    url: '/prompts/greeting',
    headers: { 'mcp-arguments': `=?base64?${Buffer.from('{"name":"Zoë"}').toString('base64url')}?=` }
  })
  t.match(url.body.messages[0].content.text, /Zoë/, 'base64url alphabet accepted')
})

t.test('bad Mcp-Arguments headers are 400 naming the header', async (t) => {
  const { app } = await build(t)
  const cases: [string, RegExp][] = [
    ['{nope', /Invalid Mcp-Arguments header: not valid JSON/],
    ['["Ada"]', /must be a JSON object/],
    ['{"name":1}', /argument "name" must be a string/],
    ['=?base64?!!!?=', /not valid JSON/],
    [`=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`, /not UTF-8/],
    ['{"name":"Zo\u00eb"}', /non-ASCII values must use the =\?base64\?...\?= form/]
  ]
  for (const [value, message] of cases) {
    const res = await call(app, { url: '/prompts/greeting', headers: { 'mcp-arguments': value } })
    t.equal(res.status, 400, value)
    t.equal(res.body.code, -32602)
    t.match(res.body.message, message)
  }
})

t.test('POST /prompts/{name} is the body fallback', async (t) => {
  const { app } = await build(t)
  const res = await call(app, {
    method: 'POST',
    url: '/prompts/greeting',
    payload: { arguments: { name: 'G'.repeat(20000) } }
  })
  t.equal(res.status, 200)
  t.equal(res.body.messages[0].content.text.length, 'Please write a short, warm greeting for .'.length + 20000)
  const bad = await call(app, { method: 'POST', url: '/prompts/greeting', payload: { arguments: { name: 5 } } })
  t.same([bad.status, bad.body.code], [400, -32602])
  const viaHeader = await call(app, { method: 'POST', url: '/prompts/greeting', payload: {}, headers: { 'mcp-arguments': '{"name":"Hd"}' } })
  t.match(viaHeader.body.messages[0].content.text, /for Hd\./, 'Mcp-Arguments is read on POST too')
  const both = await call(app, { method: 'POST', url: '/prompts/greeting', payload: { arguments: { name: 'A' } }, headers: { 'mcp-arguments': '{"name":"B"}' } })
  t.same([both.status, both.body.message], [400, 'Send the arguments in the body or in the Mcp-Arguments header, not both'])
  const badHeader = await call(app, { method: 'POST', url: '/prompts/greeting', payload: {}, headers: { 'mcp-arguments': '{"name":1}' } })
  t.same([badHeader.status, badHeader.body.code], [400, -32602])
})

t.test('missing required arguments and unknown prompts', async (t) => {
  const { app } = await build(t)
  const missing = await call(app, { url: '/prompts/greeting' })
  t.same([missing.status, missing.body], [400, { code: -32602, message: 'Missing required argument for prompt greeting: name' }])
  const unknown = await call(app, { url: '/prompts/nope' })
  t.same([unknown.status, unknown.body], [404, { code: -32602, message: 'Unknown prompt: nope' }])
  const encodedName = await call(app, { url: '/prompts/gree%74ing', headers: { 'mcp-arguments': '{"name":"x"}' } })
  t.equal(encodedName.status, 200, '{name} is percent-decoded once')
})

t.test('prompt handlers may return messages or a whole result', async (t) => {
  const { McpServer } = await import('../../src/core/mcp-server.js')
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.prompt({ name: 'list' }, () => [{ role: 'assistant', content: { type: 'text', text: 'hi' } }])
  mcp.prompt({ name: 'whole', description: 'default' }, () => ({ description: 'own', messages: [] }))
  const { app } = await build(t, { mcp })
  const list = await call(app, { url: '/prompts/list' })
  t.same(list.body, { messages: [{ role: 'assistant', content: { type: 'text', text: 'hi' } }], resultType: 'complete' })
  const whole = await call(app, { url: '/prompts/whole' })
  t.same(whole.body, { description: 'own', messages: [], resultType: 'complete' })
  mcp.prompt({ name: 'two', arguments: { a: { required: true }, b: { required: true }, c: {} } }, ({ a, b, c }) => a + b + (c ?? '-'))
  const two = await call(app, { url: '/prompts/two', headers: { 'mcp-arguments': '{"a":"1"}' } })
  t.equal(two.body.message, 'Missing required argument for prompt two: b')
  const none = await call(app, { url: '/prompts/two' })
  t.equal(none.body.message, 'Missing required arguments for prompt two: a, b')
  const ok = await call(app, { url: '/prompts/two', headers: { 'mcp-arguments': '{"a":"1","b":"2"}' } })
  t.equal(ok.body.messages[0].content.text, '12-')
  const { errors } = await import('../../src/errors.js')
  mcp.prompt({ name: 'refuse' }, () => {
    throw errors.invalidParams('no prompt for you')
  })
  const refused = await call(app, { url: '/prompts/refuse' })
  t.same([refused.status, refused.body.message], [400, 'no prompt for you'])
  t.throws(() => mcp.prompt({ name: '' }, () => ''), /1-128 characters/)
  t.throws(() => mcp.prompt({ name: 'list' }, () => ''), /already registered/)
})
