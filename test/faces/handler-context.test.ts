import t from 'tap'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { build, call, coreContext } from '../helpers/helper.js'
import { isThenable } from '../../src/core/maybe-promise.js'
import { resolver } from '../../src/mrtr/resolvers.js'

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

// The core's hot path (see MaybePromise): a call whose steps all answer at once is answered with a
// value, in the caller's turn; from the first step that waits, the rest goes on through a promise.
t.test('a call answered at once is a value; one that waits is a promise, and every later step still runs', async (t) => {
  const mcp = new McpServer({ name: 'maybe', version: '1.0.0' })
  const order: string[] = []
  const step = <T>(name: string, value: T): T => {
    order.push(name)
    return value
  }
  const first = resolver({ name: 'first', resolve: () => step('first', 1) })
  const second = resolver({
    name: 'second',
    needs: { first },
    resolve: (_a, { first }) => new Promise<number>((resolve) => setImmediate(() => resolve(step('second', first + 1))))
  })
  const third = resolver({ name: 'third', needs: { second }, resolve: (_a, { second }) => step('third', second + 1) })
  mcp.tool({ name: 'now', input: Type.Object({}) }, () => 'at once')
  mcp.tool({ name: 'later', input: Type.Object({}) }, async () => 'later')
  mcp.tool({ name: 'sync-plan', input: Type.Object({}), resolvers: { first } }, (_a, ctx) => `first=${ctx.resolved.first}`)
  mcp.tool({ name: 'waiting-plan', input: Type.Object({}), resolvers: { first, third } }, (_a, ctx) => `${ctx.resolved.first} ${ctx.resolved.third}`)
  mcp.tool({ name: 'throws', input: Type.Object({}) }, () => {
    throw new Error('at once, too')
  })
  const ctx = () => coreContext(mcp)
  const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text

  const now = mcp.callTool('now', { arguments: {} }, ctx())
  t.notOk(isThenable(now), 'a handler that returns its result: the call is a value')
  t.equal(text(now), 'at once')
  const syncPlan = mcp.callTool('sync-plan', { arguments: {} }, ctx())
  t.notOk(isThenable(syncPlan), 'resolvers that answer at once: still a value')
  t.equal(text(syncPlan), 'first=1')
  const thrown = mcp.callTool('throws', { arguments: {} }, ctx())
  t.notOk(isThenable(thrown), 'a handler that throws at once: an isError value')
  t.same(thrown, { content: [{ type: 'text', text: 'at once, too' }], isError: true, resultType: 'complete' })

  const later = mcp.callTool('later', { arguments: {} }, ctx())
  t.ok(isThenable(later), 'an async handler: a promise')
  t.equal(text(await later), 'later')
  order.length = 0
  const waiting = mcp.callTool('waiting-plan', { arguments: {} }, ctx())
  t.ok(isThenable(waiting), 'a resolver that waits: a promise')
  t.same(order, ['first'], 'the steps after the waiting one have not run yet')
  t.equal(text(await waiting), '1 3', 'and run, in order, once it answers')
  t.same(order, ['first', 'second', 'third'])
})
