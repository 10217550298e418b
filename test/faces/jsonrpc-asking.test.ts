import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, call } from '../helpers/helper.js'
import { LEGACY, rpc } from '../helpers/rpc.js'
import { answerRequest } from '../../src/messaging/answers.js'
import type { Mailbox } from '../../src/store/types.js'

/**
 * 2025-era server-to-client requests over /mcp: a handler's question goes out on the SSE stream of
 * the POST that runs it (id = its /requests queue id), and the client's JSON-RPC response, POSTed
 * on its own, completes it through the store. The official SDK client does the same over a real
 * socket in sdk-client.test.ts; here each step is checked on the wire.
 */
const SSE = { accept: 'application/json, text/event-stream' }

async function initialize(app: FastifyInstance) {
  await rpc(app, 'initialize', { protocolVersion: LEGACY, capabilities: { elicitation: {} }, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy' })
}

/** The question the server put on the queue (and the stream), as POST /requests hands it out. */
async function asked(app: FastifyInstance): Promise<{ id: string; request: { method: string } }> {
  for (let i = 0; i < 100; i++) {
    const res = await call(app, { method: 'POST', url: '/requests', headers: { 'mcp-protocol-version': LEGACY } })
    if (res.status === 200) return { id: res.headers['mcp-request-id'] as string, request: res.body }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('nothing was asked')
}

/** A legacy tools/call that takes SSE, as raw text (its body is a stream of events). */
const callStreamed = (app: FastifyInstance, id: string | number, name: string) =>
  app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': LEGACY, ...SSE },
    payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })
  })

const answer = (app: FastifyInstance, body: object) =>
  call(app, { method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', 'mcp-protocol-version': LEGACY }, payload: JSON.stringify({ jsonrpc: '2.0', ...body }) })

/** The JSON-RPC messages of an SSE body. */
const events = (raw: string) => raw.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)))

t.test('a question on the stream, a checked answer in a POST of its own, the result as the last event', async (t) => {
  const { app } = await build(t)
  await initialize(app)
  const pending = callStreamed(app, 'w1', 'get_weather')
  const q = await asked(app)
  t.equal(q.request.method, 'elicitation/create')
  // An answer that does not fit the question is refused, and the question still waits.
  const wrong = await answer(app, { id: q.id, result: { action: 'accept', content: { location: 7 } } })
  t.same([wrong.status, wrong.body.error.code], [400, -32602])
  const ok = await answer(app, { id: q.id, result: { action: 'accept', content: { location: 'Oslo' } } })
  t.same([ok.status, ok.raw], [202, ''])
  const again = await answer(app, { id: q.id, result: { action: 'accept', content: { location: 'Oslo' } } })
  t.equal(again.status, 404, 'answered once only')

  const res = await pending
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/event-stream/)
  const [request, response] = events(res.payload)
  t.match(request, { jsonrpc: '2.0', id: q.id, method: 'elicitation/create', params: { message: 'Which location?' } })
  t.match(response, { jsonrpc: '2.0', id: 'w1', result: { content: [{ type: 'text', text: /^Weather in Oslo: / }] } })
})

t.test('an error answer fails the call the way the /requests queue does', async (t) => {
  const { app } = await build(t)
  await initialize(app)
  const pending = callStreamed(app, 2, 'get_weather')
  const q = await asked(app)
  const res = await answer(app, { id: q.id, error: { code: -1, message: 'the user closed the form', data: { why: 'busy' } } })
  t.equal(res.status, 202)
  const [, response] = events((await pending).payload)
  t.match(response, { id: 2, result: { isError: true, content: [{ text: /answered elicitation\/create with an error: the user closed the form/ }] } })
})

t.test('an answer that loses the race to another is unknown, as if it came second', async (t) => {
  const store = {
    getRequest: async () => ({ id: 'q', request: { method: 'roots/list' }, createdAt: 0, deliveries: 1 }),
    completeRequest: async () => false
  } as unknown as Mailbox
  await t.rejects(answerRequest(store, 'o', 'q', { result: { roots: [] } }), { code: -32602, status: 404 })
})
