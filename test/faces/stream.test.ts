import t, { type Test } from 'tap'
import { request } from 'undici'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { buildServer } from '../../src/server.js'

async function listen(t: Test, mcp: McpServer) {
  const app = await buildServer({ mcp, logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

function events(text: string): { event: string; data: any }[] {
  return text
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((block) => {
      const lines = block.split('\n')
      return { event: lines[0]!.slice('event: '.length), data: JSON.parse(lines[1]!.slice('data: '.length)) }
    })
}

function server() {
  const mcp = new McpServer({ name: 't', version: '1' })
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  mcp.tool({ name: 'steps', input: Type.Object({ n: Type.Integer() }) }, async ({ n }, ctx) => {
    for (let i = 1; i <= n; i++) await ctx.progress(i, n)
    await ctx.sendLog('debug', 'too quiet')
    await ctx.sendLog('warning', 'careful', 'steps')
    await ctx.sendLog('error', 'loud')
    await ctx.progress(n, undefined, 'finishing')
    if (n === 99) await gate
    return `done ${n}`
  })
  mcp.tool({ name: 'refuses' }, () => {
    throw Object.assign(new Error('no'), { statusCode: 418 })
  })
  mcp.tool({ name: 'hangs' }, (_a, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('aborted'))))
  return { mcp, release: () => release() }
}

t.test('Accept: text/event-stream streams notifications, then the result', async (t) => {
  const { mcp } = server()
  const base = await listen(t, mcp)
  const res = await request(`${base}/tools/steps/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'mcp-request-id': 'stream-1' },
    body: JSON.stringify({ arguments: { n: 2 }, _meta: { 'io.modelcontextprotocol/logLevel': 'info' } })
  })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/event-stream')
  t.same([res.headers['mcp-request-id'], res.headers['mcp-protocol-version']], ['stream-1', '2026-07-28'])
  t.same(events(await res.body.text()), [
    { event: 'notification', data: { method: 'notifications/progress', params: { progressToken: 'stream-1', progress: 1, total: 2 } } },
    { event: 'notification', data: { method: 'notifications/progress', params: { progressToken: 'stream-1', progress: 2, total: 2 } } },
    { event: 'notification', data: { method: 'notifications/message', params: { level: 'warning', data: 'careful', logger: 'steps' } } },
    { event: 'notification', data: { method: 'notifications/message', params: { level: 'error', data: 'loud' } } },
    { event: 'notification', data: { method: 'notifications/progress', params: { progressToken: 'stream-1', progress: 2, message: 'finishing' } } },
    { event: 'result', data: { content: [{ type: 'text', text: 'done 2' }], resultType: 'complete' } }
  ])
  const unknownLevel = await request(`${base}/tools/steps/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ arguments: { n: 0 }, _meta: { 'io.modelcontextprotocol/logLevel': 'chatty' } })
  })
  t.notMatch(await unknownLevel.body.text(), /notifications\/message/, 'an unknown level lets nothing through')
  const json = await request(`${base}/tools/steps/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"arguments":{"n":1}}' })
  t.equal(json.headers['content-type'], 'application/json; charset=utf-8', 'JSON stays the default')
  t.same(await json.body.json(), { content: [{ type: 'text', text: 'done 1' }], resultType: 'complete' })
})

t.test('events arrive as they happen; protocol errors end the stream with an error event', async (t) => {
  const { mcp, release } = server()
  const base = await listen(t, mcp)
  const res = await request(`${base}/tools/steps/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ arguments: { n: 99 }, _meta: { progressToken: 7 } })
  })
  const reader = res.body[Symbol.asyncIterator]()
  const first = String((await reader.next()).value)
  t.match(first, /^event: notification\ndata: \{"method":"notifications\/progress","params":\{"progressToken":7,"progress":1,"total":99\}\}/, 'the first progress came before the result existed')
  release()
  let rest = first
  for (let chunk = await reader.next(); !chunk.done; chunk = await reader.next()) rest += String(chunk.value)
  t.same(events(rest).at(-1), { event: 'result', data: { content: [{ type: 'text', text: 'done 99' }], resultType: 'complete' } })
  const unknown = await request(`${base}/tools/nope/calls`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: '{}' })
  t.same(events(await unknown.body.text()), [{ event: 'error', data: { code: -32602, message: 'Unknown tool: nope' } }])
  const teapot = await request(`${base}/tools/refuses/calls`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: '{}' })
  t.same(events(await teapot.body.text()), [{ event: 'result', data: { content: [{ type: 'text', text: 'no' }], isError: true, resultType: 'complete' } }])
})

t.test('a client that leaves the stream aborts the handler', async (t) => {
  const { mcp } = server()
  let aborted!: () => void
  const seen = new Promise<void>((resolve) => (aborted = resolve))
  mcp.tool({ name: 'watch' }, (_a, ctx) => new Promise((resolve) => {
    ctx.signal.addEventListener('abort', () => ((aborted(), resolve('gone'))))
  }))
  const base = await listen(t, mcp)
  const controller = new AbortController()
  const pending = request(`${base}/tools/watch/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: '{}',
    signal: controller.signal
  })
  const res = await pending
  t.equal(res.statusCode, 200)
  controller.abort()
  await seen
  t.pass('the handler saw the abort')
})
