import t from 'tap'
import { fetch } from 'undici'
import { McpServer } from '../../src/core/mcp-server.js'
import { MODERN, listenWithAgent } from '../helpers/rpc.js'
import { namedEvent, sseReader } from '../helpers/sse-reader.js'

/** `POST /subscriptions/listen`, its SSE events read as `{event, data}` (comments counted apart). */
async function listenRest(server: { url: string; agent: import('undici').Agent }, body: unknown, requestId = 'listen-1') {
  const res = await fetch(server.url.replace(/\/mcp$/, '/subscriptions/listen'), {
    dispatcher: server.agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': MODERN, 'mcp-request-id': requestId },
    body: JSON.stringify(body)
  })
  return { res, ...sseReader(res.body!, namedEvent) }
}

t.test('POST /subscriptions/listen: the 2026-07-28 stream on the Pure HTTP face, its events named as a streamed call names them', async (t) => {
  const mcp = new McpServer({ name: 'l', version: '1' })
  mcp.resource({ uri: 'demo://a', name: 'a' }, () => 'a')
  const server = await listenWithAgent(t, { mcp, logger: false })
  const stream = await listenRest(server, { notifications: { toolsListChanged: true, resourceSubscriptions: ['demo://a', 'demo://nope'] } })
  t.equal(stream.res.status, 200)
  t.equal(stream.res.headers.get('content-type'), 'text/event-stream')
  t.equal(stream.res.headers.get('mcp-request-id'), 'listen-1')
  const tag = { 'io.modelcontextprotocol/subscriptionId': 'listen-1' }
  const [ack] = await stream.until(1)
  t.same(ack, {
    event: 'notification',
    data: { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: tag, notifications: { toolsListChanged: true, resourceSubscriptions: ['demo://a'] } } }
  }, 'only the URIs served are honoured')

  mcp.prompt({ name: 'p' }, () => 'p') // not asked for
  mcp.tool({ name: 'x' }, () => 'x')
  await mcp.resourceUpdated('demo://a')
  const events = await stream.until(3)
  t.same(events.slice(1), [
    { event: 'notification', data: { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: tag } } },
    { event: 'notification', data: { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'demo://a', _meta: tag } } }
  ])

  // A server that stops ends it as on /mcp: the request's result, then the end.
  await server.app.close()
  const all = await stream.until(99)
  t.same(all.at(-1), { event: 'result', data: { resultType: 'complete', _meta: tag } })
})

t.test('POST /subscriptions/listen: params are checked before any stream opens', async (t) => {
  const server = await listenWithAgent(t, { mcp: new McpServer({ name: 'l', version: '1' }), logger: false })
  const res = await fetch(server.url.replace(/\/mcp$/, '/subscriptions/listen'), {
    dispatcher: server.agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': MODERN },
    body: JSON.stringify({ notifications: { toolsListChanged: 'yes' } })
  })
  t.equal(res.status, 400)
  t.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
  t.match(await res.json(), { code: -32602, message: /toolsListChanged/ })
})
