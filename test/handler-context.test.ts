import t from 'tap'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../src/core/mcp-server.js'
import { build, call } from './helper.js'

// A handler's ctx is the call's one CallContext (src/core/call-context.ts): every member of the
// request's context reads through to it.
t.test("a handler's ctx carries every member of the request's context", async (t) => {
  const mcp = new McpServer({ name: 'ctx', version: '1.0.0' })
  mcp.tool({ name: 'inspect', input: Type.Object({}) }, (_args, ctx) =>
    JSON.stringify({
      requestId: ctx.requestId,
      protocolVersion: ctx.protocolVersion,
      era: ctx.era,
      meta: ctx.meta,
      clientCapabilities: ctx.clientCapabilities,
      principal: ctx.principal.id,
      deadline: ctx.deadline > Date.now(),
      aborted: ctx.signal.aborted,
      log: typeof ctx.log.info,
      resumed: ctx.resumed ?? null,
      deliverRequest: typeof ctx.deliverRequest,
      inputResponses: ctx.inputResponses ?? null,
      resolved: ctx.resolved
    })
  )
  const { app } = await build(t, { mcp })
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { roots: {} }, progressToken: 'p' }
  const res = await call(app, {
    method: 'POST',
    url: '/tools/inspect/calls',
    headers: { 'content-type': 'application/json', 'mcp-request-id': 'req-1' },
    payload: JSON.stringify({ _meta: meta, arguments: {} })
  })
  t.equal(res.status, 200)
  t.same(JSON.parse(res.body.content[0].text), {
    requestId: 'req-1',
    protocolVersion: '2026-07-28',
    era: 'modern',
    meta,
    clientCapabilities: { roots: {} },
    principal: 'anonymous',
    deadline: true,
    aborted: false,
    log: 'function',
    resumed: null,
    deliverRequest: 'undefined',
    inputResponses: null,
    resolved: {}
  })
})

// runRound awaits a handler's answer only when it is thenable; any thenable counts, not only a Promise.
t.test('a handler may answer with a value, a Promise or any thenable', async (t) => {
  const mcp = new McpServer({ name: 'answers', version: '1.0.0' })
  mcp.tool({ name: 'value', input: Type.Object({}) }, () => 'at once')
  mcp.tool({ name: 'promise', input: Type.Object({}) }, async () => 'later')
  mcp.tool({ name: 'thenable', input: Type.Object({}) }, () => ({ then: (resolve: (v: string) => void) => setImmediate(() => resolve('a thenable')) }) as never)
  mcp.tool({ name: 'failing-thenable', input: Type.Object({}) }, () => ({ then: (_: unknown, reject: (e: Error) => void) => reject(new Error('no luck')) }) as never)
  const { app } = await build(t, { mcp })
  const text = async (name: string) => {
    const res = await call(app, { method: 'POST', url: `/tools/${name}/calls`, headers: { 'content-type': 'application/json' }, payload: '{"arguments":{}}' })
    t.equal(res.status, 200, name)
    return { text: res.body.content[0].text, isError: res.body.isError === true }
  }
  t.same(await text('value'), { text: 'at once', isError: false })
  t.same(await text('promise'), { text: 'later', isError: false })
  t.same(await text('thenable'), { text: 'a thenable', isError: false })
  t.same(await text('failing-thenable'), { text: 'no luck', isError: true })
})
