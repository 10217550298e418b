import t from 'tap'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { jsonProblem, ownValue } from '../../src/core/json-limits.js'
import { decodeJsonHeader } from '../../src/headers.js'
import { build, call } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'

// Keys that name something on Object.prototype: a lookup through the chain finds a function.
const TRAPS = { constructor: { action: 'accept', content: {} }, toString: { action: 'accept' }, hasOwnProperty: {}, valueOf: { action: 'decline' } }
const ASKING = { elicitation: { form: {} }, roots: {}, sampling: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } }
const META = { 'io.modelcontextprotocol/clientCapabilities': ASKING }

t.test('inputResponses keys named after Object.prototype are ordinary keys on every MRTR route', async (t) => {
  const { app } = await build(t)
  const cases = [
    { what: 'tools/call', method: 'POST', url: '/tools/get_weather/calls', payload: { arguments: {} } },
    { what: 'prompts/get', method: 'POST', url: '/prompts/code_review', payload: { arguments: { code: 'x' } } },
    { what: 'resources/read', method: 'POST', url: `/resources/${encodeURIComponent('demo://roots')}`, payload: {} }
  ] as const
  for (const c of cases) {
    const first = await call(app, { method: c.method, url: c.url, payload: { ...c.payload, _meta: META } })
    t.equal(first.body.resultType, 'input_required', `${c.what}: asks`)
    const retry = await call(app, {
      method: c.method,
      url: c.url,
      payload: { ...c.payload, _meta: META, inputResponses: TRAPS, requestState: first.body.requestState }
    })
    t.equal(retry.status, 200, `${c.what}: not a 500`)
    t.equal(retry.body.resultType, 'input_required', `${c.what}: the keys answer nothing; it asks again`)
    t.notOk(retry.body.isError, `${c.what}: not a broken tool result`)
  }
  // The same on a GET, with the keys in the Mcp-Input-Responses header.
  const uri = `/resources/${encodeURIComponent('demo://roots')}`
  const first = await call(app, { url: uri, headers: { 'mcp-meta': JSON.stringify(META) } })
  const retry = await call(app, {
    url: uri,
    headers: { 'mcp-meta': JSON.stringify(META), 'mcp-input-responses': JSON.stringify(TRAPS), 'mcp-request-state': first.body.requestState }
  })
  t.equal(retry.status, 200, 'GET with the keys in a header: not a 500')

  // And on the JSON-RPC face.
  const asked = await rpc(app, 'prompts/get', { name: 'code_review', arguments: { code: 'x' } }, { caps: ASKING })
  const again = await rpc(app, 'prompts/get', { name: 'code_review', arguments: { code: 'x' }, inputResponses: TRAPS, requestState: asked.body.result.requestState }, { caps: ASKING })
  t.equal(again.status, 200, '/mcp: 200')
  t.equal(again.body.result?.resultType, 'input_required', '/mcp: asks again, no internal error')
})

t.test('tasks/update with keys named after Object.prototype: ignored, not a 500', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'approve', task: 'required', pollIntervalMs: 10 }, async (_a, ctx) => {
    const answer = await ctx.elicit('Approve?', Type.Object({ ok: Type.Boolean() }))
    return answer.action === 'accept' ? `ok=${String(answer.content.ok)}` : 'declined'
  })
  const { app } = await build(t, { mcp })
  const started = await call(app, { method: 'POST', url: '/tools/approve/calls', payload: { _meta: META } })
  t.equal(started.status, 202)
  const id = started.body.taskId as string
  const headers = { 'mcp-meta': JSON.stringify(META) }
  let task = await call(app, { url: `/tasks/${id}`, headers })
  while (task.body.status !== 'input_required') task = await call(app, { url: `/tasks/${id}`, headers })
  const update = await call(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { _meta: META, inputResponses: TRAPS } })
  t.equal(update.status, 200, 'Pure HTTP: ignored keys, 200')
  const viaRpc = await rpc(app, 'tasks/update', { taskId: id, inputResponses: TRAPS }, { caps: ASKING, headers: { 'mcp-name': id } })
  t.equal(viaRpc.status, 200, '/mcp: 200')
  t.notOk(viaRpc.body.error, '/mcp: no error')
  const key = Object.keys(task.body.inputRequests)[0]!
  await call(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { _meta: META, inputResponses: { [key]: { action: 'accept', content: { ok: true } } } } })
  while (task.body.status !== 'completed') task = await call(app, { url: `/tasks/${id}`, headers })
  t.same(task.body.result.content, [{ type: 'text', text: 'ok=true' }], 'the real answer still works')
})

t.test('jsonProblem and ownValue', async (t) => {
  t.equal(jsonProblem({ a: [1, 'x', null, { b: true }] }), undefined, 'ordinary JSON')
  t.match(jsonProblem(JSON.parse('{"a":{"__proto__":1}}')), /"__proto__"/, '__proto__ anywhere')
  t.match(jsonProblem([Infinity]), /finite/, 'Infinity')
  t.match(jsonProblem(JSON.parse('[[[1]]]'), 2), /deeper than 2 levels/, 'depth')
  t.equal(jsonProblem(JSON.parse('[[1]]'), 2), undefined, 'at the depth limit')
  t.equal(jsonProblem(JSON.parse('{"constructor":{"toString":1}}')), undefined, 'constructor and toString are ordinary keys')
  t.equal(ownValue({}, 'toString'), undefined, 'not through the prototype')
  t.equal(ownValue({ toString: 1 } as Record<string, number>, 'toString'), 1, 'its own')
  t.equal(ownValue(undefined, 'x'), undefined)
  t.throws(() => decodeJsonHeader('mcp-meta', '{"__proto__":{}}', 'object'), /Mcp-Meta header: it has the key "__proto__"/, 'headers too')
})
