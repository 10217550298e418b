import t, { type Test } from 'tap'
import { type Agent, fetch } from 'undici'
import { McpServer } from '../../src/core/mcp-server.js'
import { RedisStore } from '../../src/store/redis.js'
import { startRedis } from '../helpers/redis-server.js'
import { sseReader } from '../helpers/sse-reader.js'
import { LEGACY, MODERN, listenWithAgent } from '../helpers/rpc.js'

// The legacy era's GET /mcp stream: the connection's notifications outside any request.

const listen = (t: Test, mcp: McpServer, pollMs = 50) => listenWithAgent(t, { mcp, logger: false, jsonRpc: { keepAliveMs: 25, pollMs } })

/** Open GET /mcp as a 2025-11-25 client does and read its events (data lines, JSON) and comments. */
async function open(server: { url: string; agent: Agent }, headers: Record<string, string> = {}) {
  const res = await fetch(server.url, { dispatcher: server.agent, headers: { accept: 'text/event-stream', 'mcp-protocol-version': LEGACY, ...headers } })
  return { res, ...sseReader(res.body!) }
}

const post = (server: { url: string; agent: Agent }, method: string, params: Record<string, unknown>) =>
  fetch(server.url, {
    dispatcher: server.agent,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': LEGACY },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })
  }).then((r) => r.json() as Promise<any>)

t.test('GET /mcp (2025-11-25): list changes, updates of its subscriptions, log messages at its level; each once', async (t) => {
  const mcp = new McpServer({ name: 's', version: '1' })
  mcp.resource({ uri: 'x:r', name: 'r' }, () => 'r')
  const server = await listen(t, mcp)
  t.same((await post(server, 'resources/subscribe', { uri: 'x:r' })).result, {})
  t.same((await post(server, 'logging/setLevel', { level: 'warning' })).result, {})
  const stream = await open(server)
  t.equal(stream.res.status, 200)
  t.equal(stream.res.headers.get('content-type'), 'text/event-stream')
  t.equal(stream.res.headers.get('mcp-protocol-version'), LEGACY)

  mcp.tool({ name: 'added' }, () => 'ok')
  t.same(await stream.until(1), [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }])
  await mcp.resourceUpdated('x:r')
  await mcp.resourceUpdated('x:other') // nobody subscribed
  await mcp.log('info', 'below its level')
  await mcp.log('error', { disk: 'full' }, 'monitor')
  t.same((await stream.until(3)).slice(1), [
    { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'x:r' } },
    { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'error', data: { disk: 'full' }, logger: 'monitor' } }
  ])
  await stream.until(3 + 0)
  t.ok(await waitFor(() => stream.comments() > 0), 'a quiet stream sends keep-alive comments')
  // Acknowledged once written: a Pure HTTP poller of the same connection finds nothing left.
  const polled = await fetch(server.url.replace(/\/mcp$/, '/notifications'), { dispatcher: server.agent, headers: { 'mcp-protocol-version': LEGACY } })
  t.same(await polled.json(), [])
  await stream.reader.cancel()
})

t.test('a newer stream of the same connection ends the older; closing the server ends them', async (t) => {
  const mcp = new McpServer({ name: 's', version: '1' })
  const server = await listen(t, mcp)
  // A connection is known to the store once it did something (initialize, as every client does first).
  t.equal((await post(server, 'initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'c', version: '1' } })).result.protocolVersion, LEGACY)
  const first = await open(server)
  const second = await open(server)
  t.same(await first.until(1), [], 'the first ended, having sent nothing')
  mcp.tool({ name: 'added' }, () => 'ok')
  t.same(await second.until(1), [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }], 'the second has it')
  await server.app.close()
  t.same(await second.until(2), [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }], 'and ends with the server')
})

t.test('a group another reader acknowledged first is no failure; a store that fails ends the stream', async (t) => {
  const mcp = new McpServer({ name: 's', version: '1' })
  const server = await listen(t, mcp)
  await post(server, 'initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'c', version: '1' } })
  const stream = await open(server)
  // A poller of the same connection acknowledges the group between this stream's take and its own ack.
  const acknowledge = mcp.messages.acknowledge.bind(mcp.messages)
  mcp.messages.acknowledge = async (owner, group) => {
    await acknowledge(owner, group)
    return acknowledge(owner, group + '-not-current')
  }
  mcp.tool({ name: 'one' }, () => 'ok')
  t.same(await stream.until(1), [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }])
  mcp.messages.acknowledge = acknowledge
  mcp.prompt({ name: 'two' }, () => 'ok')
  t.same((await stream.until(2))[1], { jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, 'the stream went on')
  mcp.store.mailbox.takeNotifications = async () => {
    throw new Error('the store is down')
  }
  mcp.tool({ name: 'three' }, () => 'ok')
  t.equal((await stream.until(3)).length, 2, 'the stream ended, its client reconnects')
})

t.test('405 where there is no stream to give: 2026-07-28 (subscriptions/listen instead), or no Accept of text/event-stream', async (t) => {
  const server = await listen(t, new McpServer({ name: 's', version: '1' }))
  for (const headers of [{ 'mcp-protocol-version': MODERN }, { accept: 'application/json' }]) {
    const res = await fetch(server.url, { dispatcher: server.agent, headers: { accept: 'text/event-stream', 'mcp-protocol-version': LEGACY, ...headers } })
    t.equal(res.status, 405, JSON.stringify(headers))
    t.equal(res.headers.get('allow'), 'GET, POST')
    t.match(await res.json(), { error: { code: -32601, message: 'Method not allowed' } })
  }
})

t.test('over Redis: what another instance queues reaches the stream within its poll', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const [here, there] = [0, 1].map(() => new McpServer({ name: 's', version: '1', store: new RedisStore({ url: redis.url, prefix: 'ss:' }) })) as [McpServer, McpServer]
  const server = await listen(t, here)
  t.teardown(() => Promise.all([here.store.close(), there.store.close()]))
  t.same((await post(server, 'logging/setLevel', { level: 'debug' })).result, {})
  const stream = await open(server)
  await there.log('notice', 'from the other instance')
  t.same(await stream.until(1), [{ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'notice', data: 'from the other instance' } }])
  await stream.reader.cancel()
})

t.test('the official SDK client hears list_changed and log messages on its GET stream', async (t) => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js')
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js')
  const types = await import('@modelcontextprotocol/sdk/types.js')
  const mcp = new McpServer({ name: 's', version: '1' })
  const server = await listen(t, mcp)
  const client = new Client({ name: 'sdk', version: '1' })
  const heard: string[] = []
  client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => void heard.push('tools'))
  client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => void heard.push(`log ${String(n.params.data)}`))
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
  t.teardown(() => client.close())
  await client.setLoggingLevel('info')
  // The SDK opens its GET stream after initialize; what is queued before it opens waits for it.
  mcp.tool({ name: 'added' }, () => 'ok')
  await mcp.log('info', 'hello')
  t.ok(await waitFor(() => heard.length === 2), 'both arrived')
  t.same(heard, ['tools', 'log hello'])
})

/** Poll `check` until it holds (the test waits for an event, not for a while). */
async function waitFor(check: () => boolean): Promise<boolean> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  return check()
}
