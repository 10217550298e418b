import t from 'tap'
import { Type } from '@sinclair/typebox'
import { fetch } from 'undici'
import { McpServer } from '../../src/core/mcp-server.js'
import { MemoryStore } from '../../src/store/memory.js'
import { build, call } from '../helpers/helper.js'
import { MODERN, envelope, listenWithAgent, rpc } from '../helpers/rpc.js'

/** A catalogue whose tools count their runs; `slow` waits for `release`, `steps` streams progress first. */
function server() {
  const mcp = new McpServer({ name: 't', version: '1', store: new MemoryStore() })
  const runs = { count: 0, slow: 0, steps: 0, wait: 0 }
  let waiting: (() => void) | undefined
  const waited = new Promise<void>((resolve) => (waiting = resolve))
  let release: (() => void) | undefined
  let started: (() => void) | undefined
  const running = new Promise<void>((resolve) => (started = resolve))
  mcp.tool({ name: 'count', input: Type.Object({ n: Type.Integer() }) }, ({ n }) => `run ${++runs.count} of n=${n}`)
  mcp.tool({ name: 'slow' }, async () => {
    runs.slow++
    started?.()
    await new Promise<void>((resolve) => (release = resolve))
    return 'slow done'
  })
  mcp.tool({ name: 'steps' }, async (_a, ctx) => {
    await ctx.progress(1, 2)
    return `steps ${++runs.steps}`
  })
  // Answers once its client has gone (or a second time at once).
  mcp.tool({ name: 'wait' }, (_a, ctx) => {
    if (++runs.wait > 1) return 'second run'
    waiting?.()
    return new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('aborted')))
  })
  return { mcp, runs, running, waited, release: () => release?.() }
}

const count = (n: number) => ({ name: 'count', arguments: { n } })
const keyed = (key: string, extra: Record<string, string> = {}) => ({ headers: { 'mcp-request-id': key, ...extra } })

t.test('/mcp: the same Mcp-Request-Id and params run the tool once; the retry gets the first result under its own id', async (t) => {
  const { mcp, runs } = server()
  const { app } = await build(t, { mcp })
  const first = await rpc(app, 'tools/call', count(1), { id: 1, ...keyed('k-1') })
  t.same([first.status, first.body], [200, { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'run 1 of n=1' }], resultType: 'complete' } }])
  t.equal(first.headers['idempotent-replayed'], undefined)
  // A retry with a new JSON-RPC id and a progressToken of its own is the same request.
  const retry = await rpc(app, 'tools/call', { ...count(1), _meta: { progressToken: 'attempt-2' } }, { id: 'retry', ...keyed('k-1') })
  t.same([retry.status, retry.body], [200, { jsonrpc: '2.0', id: 'retry', result: first.body.result }])
  t.equal(retry.headers['idempotent-replayed'], 'true')
  t.equal(retry.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(runs.count, 1, 'the tool ran once')

  const other = await rpc(app, 'tools/call', count(2), { id: 3, ...keyed('k-1') })
  t.same([other.status, other.body], [409, { jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Mcp-Request-Id k-1 was already used for a different request' } }])
  const legacy = await rpc(app, 'tools/call', count(1), { era: 'legacy', id: 4, ...keyed('k-1') })
  t.equal(legacy.status, 409, 'another protocol version is another request')
  const rest = await call(app, { method: 'POST', url: '/tools/count/calls', headers: { 'mcp-request-id': 'k-1' }, payload: { arguments: { n: 1 } } })
  t.equal(rest.status, 409, 'the same key on the other face is another request')
  t.equal(runs.count, 1)

  await rpc(app, 'tools/call', count(1), { id: 1 })
  await rpc(app, 'tools/call', count(1), { id: 1 })
  t.equal(runs.count, 3, 'without Mcp-Request-Id nothing is deduplicated, whatever the JSON-RPC id')
  const list = await rpc(app, 'tools/list', {}, keyed('k-1'))
  t.equal(list.status, 200, 'only tools/call is deduplicated')
})

t.test('/mcp: the legacy era keeps the same guarantee', async (t) => {
  const { mcp, runs } = server()
  const { app } = await build(t, { mcp })
  const first = await rpc(app, 'tools/call', count(5), { era: 'legacy', id: 7, ...keyed('old-1') })
  const retry = await rpc(app, 'tools/call', count(5), { era: 'legacy', id: 8, ...keyed('old-1') })
  t.same([first.body.result, retry.body.id, retry.body.result, runs.count], [retry.body.result, 8, { content: [{ type: 'text', text: 'run 1 of n=5' }] }, 1])
})

t.test('/mcp: an error answer keeps nothing: the key is free again', async (t) => {
  const { mcp, runs } = server()
  const { app } = await build(t, { mcp })
  const bad = await rpc(app, 'tools/call', { name: 'count', arguments: 'x' }, keyed('e-1'))
  t.equal(bad.body.error.code, -32602)
  const fixed = await rpc(app, 'tools/call', count(1), keyed('e-1'))
  t.equal(fixed.status, 200)
  t.same([fixed.body.result.content[0].text, runs.count], ['run 1 of n=1', 1], 'the same key with other params runs: nothing was kept')
})

t.test('/mcp: while the first attempt runs, a retry gets 409 with Retry-After: 1', async (t) => {
  const { mcp, runs, running, release } = server()
  const { app } = await build(t, { mcp })
  const first = rpc(app, 'tools/call', { name: 'slow', arguments: {} }, keyed('s-1'))
  await running
  const retry = await rpc(app, 'tools/call', { name: 'slow', arguments: {} }, { id: 2, ...keyed('s-1') })
  t.same([retry.status, retry.headers['retry-after'], retry.body], [409, '1', { jsonrpc: '2.0', id: 2, error: { code: -32600, message: 'A request with Mcp-Request-Id s-1 is still running: retry later' } }])
  release()
  t.equal((await first).body.result.content[0].text, 'slow done')
  const replay = await rpc(app, 'tools/call', { name: 'slow', arguments: {} }, keyed('s-1'))
  t.same([replay.body.result.content[0].text, replay.headers['idempotent-replayed'], runs.slow], ['slow done', 'true', 1])
})

t.test('/mcp: a call answered as a stream is replayed as its result, in one JSON body', async (t) => {
  const { mcp, runs } = server()
  const { url, agent } = await listenWithAgent(t, { mcp, logger: false })
  const post = (id: number) =>
    fetch(url, {
      dispatcher: agent,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': 'steps',
        'mcp-request-id': 'sse-1'
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'steps', arguments: {}, _meta: { ...envelope(), progressToken: id } } })
    })
  const first = await post(1)
  t.equal(first.headers.get('content-type'), 'text/event-stream')
  t.match(await first.text(), /notifications\/progress[\s\S]*"id":1,"result":\{"content":\[\{"type":"text","text":"steps 1"\}\]/)
  const retry = await post(2)
  t.same([retry.headers.get('content-type'), retry.headers.get('idempotent-replayed')], ['application/json; charset=utf-8', 'true'])
  t.same(await retry.json(), { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'steps 1' }], resultType: 'complete' } })
  t.equal(runs.steps, 1)
})

t.test('/mcp: idempotencyTtlMs 0 turns it off here too', async (t) => {
  const { mcp, runs } = server()
  const { app } = await build(t, { mcp, idempotencyTtlMs: 0 })
  await rpc(app, 'tools/call', count(1), keyed('off'))
  await rpc(app, 'tools/call', count(1), keyed('off'))
  t.equal(runs.count, 2)
})

t.test('/mcp: a client that went away before its answer leaves nothing: the retry runs again', async (t) => {
  const { mcp, runs, waited } = server()
  const { url, agent } = await listenWithAgent(t, { mcp, logger: false })
  const gone = new AbortController()
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait', arguments: {}, _meta: envelope() } })
  const headers = { 'content-type': 'application/json', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'wait', 'mcp-request-id': 'gone-1' }
  const first = fetch(url, { dispatcher: agent, method: 'POST', headers, body, signal: gone.signal }).catch(() => undefined)
  await waited
  gone.abort()
  await first
  // 409 while the first attempt winds down; then the key is free and the tool runs again.
  for (;;) {
    const retry = await fetch(url, { dispatcher: agent, method: 'POST', headers, body })
    if (retry.status === 409) {
      await retry.body?.cancel()
      await new Promise((resolve) => setTimeout(resolve, 5))
      continue
    }
    t.same(await retry.json(), { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'second run' }], resultType: 'complete' } })
    break
  }
  t.equal(runs.wait, 2, 'the first attempt was not replayed')
})
