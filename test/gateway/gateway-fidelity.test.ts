import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { call, json, legacyJson } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'
import { FILESYSTEM, direct, drain, everythingStdio, serveUpstream, until } from '../helpers/gateway-helper.js'

// What a client sees through the gateway is what it sees called directly: the same capabilities,
// and the same error for a method of a capability the upstream lacks.

t.test('server-filesystem (tools only): its capabilities, and -32601 for the rest on both faces', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-fidelity-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const spec = { command: process.execPath, args: [FILESYSTEM, dir] }
  const own = await direct(t, spec)
  const { app } = await serveUpstream(t, spec)

  const theirs = own.client.getServerCapabilities()!
  const legacy = (await rpc(app, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy' })).body.result
  const { extensions, ...ours } = legacy.capabilities
  t.same(Object.keys(ours), Object.keys(theirs), 'the parts it offers, and no others')
  t.same(extensions, { 'io.modelcontextprotocol/tasks': {} }, 'besides the Tasks extension, which the gateway adds')
  t.same((await rpc(app, 'server/discover')).body.result.capabilities, legacy.capabilities, 'discover says the same')

  const absent: [string, Record<string, unknown>, () => Promise<unknown>, { method: 'GET' | 'POST'; url: string; payload?: string }][] = [
    ['prompts/list', {}, () => own.client.listPrompts(), { method: 'GET', url: '/prompts' }],
    ['prompts/get', { name: 'p' }, () => own.client.getPrompt({ name: 'p' }), { method: 'GET', url: '/prompts/p' }],
    ['resources/list', {}, () => own.client.listResources(), { method: 'GET', url: '/resources' }],
    ['resources/templates/list', {}, () => own.client.listResourceTemplates(), { method: 'GET', url: '/resources/templates' }],
    ['resources/read', { uri: 'file:///x' }, () => own.client.readResource({ uri: 'file:///x' }), { method: 'GET', url: `/resources/${encodeURIComponent('file:///x')}` }],
    ['resources/subscribe', { uri: 'file:///x' }, () => own.client.subscribeResource({ uri: 'file:///x' }), { method: 'POST', url: '/resources/subscribe', payload: '{"uri":"file:///x"}' }],
    ['logging/setLevel', { level: 'info' }, () => own.client.setLoggingLevel('info'), { method: 'POST', url: '/logLevel', payload: '{"level":"info"}' }],
    [
      'completion/complete',
      { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: '' } },
      () => own.client.complete({ ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: '' } }),
      { method: 'POST', url: '/completions', payload: '{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}' }
    ]
  ]
  for (const [method, params, directly, route] of absent) {
    const err = (await directly().then(() => undefined, (e: { code: number; message: string }) => e))!
    const expected = { code: err.code, message: err.message.replace(/^MCP error -?\d+: /, '') }
    t.same(expected, { code: -32601, message: 'Method not found' }, `${method}: the upstream's own answer`)
    t.same((await rpc(app, method, params, { era: 'legacy' })).body.error, expected, `${method} on /mcp (2025-11-25)`)
    const rest = await call(app, { ...route, headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' } })
    t.same([rest.status, rest.body], [404, expected], `${route.method} ${route.url}`)
  }
  // Whatever the params: the method is unknown, not called wrongly.
  t.same((await rpc(app, 'prompts/get', {}, { era: 'legacy' })).body.error, { code: -32601, message: 'Method not found' }, 'prompts/get without a name')
  t.same((await rpc(app, 'prompts/list', {}, { era: 'modern' })).status, 404, 'and in 2026-07-28, 404 as an unknown method is')
  const tools = await call(app, { url: '/tools', headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.same(tools.body.tools.map((x: { name: string }) => x.name), (await own.client.listTools()).tools.map((x) => x.name), 'while its tools are served')
})

t.test("the upstream's log messages outside a call reach the connections that set a level", async (t) => {
  const { app } = await serveUpstream(t, everythingStdio)
  t.equal((await call(app, { method: 'POST', url: '/logLevel', ...legacyJson({ level: 'debug' }) })).status, 202)
  // server-everything logs once during this call, then every 5 s outside any call.
  await call(app, { method: 'POST', url: '/tools/toggle-simulated-logging/calls', ...json({ arguments: {} }) })
  t.teardown(() => call(app, { method: 'POST', url: '/tools/toggle-simulated-logging/calls', ...json({ arguments: {} }) }))
  await drain(app)
  let got: { method: string; params?: Record<string, unknown> }[] = []
  await until(async () => (got = await drain(app)).length > 0, 'a log message outside the call')
  t.match(got, [{ method: 'notifications/message', params: { level: String, data: /[Ll]evel/ } }])
})

t.test('an ordinary 2025-11-25 client of /mcp hears the upstream outside its calls: log messages, resource updates', async (t) => {
  const { app } = await serveUpstream(t, everythingStdio)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js')
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js')
  const types = await import('@modelcontextprotocol/sdk/types.js')
  const client = new Client({ name: 'sdk', version: '1' })
  const logs: unknown[] = []
  const updated: string[] = []
  client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => void logs.push(n.params.data))
  client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri))
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`)))
  t.teardown(() => client.close())
  await client.setLoggingLevel('debug')
  const uri = (await client.listResources()).resources[0]!.uri
  await client.subscribeResource({ uri })
  for (const name of ['toggle-simulated-logging', 'toggle-subscriber-updates']) {
    await client.callTool({ name, arguments: {} })
    t.teardown(() => client.callTool({ name, arguments: {} }))
  }
  const during = logs.length
  // server-everything logs, and updates the subscribed resources, every 5 s outside any call.
  const simulated = () => logs.slice(during).some((d) => /-level message|level-message/.test(String(d)))
  await until(() => simulated() && updated.length > 0, 'a log message and an update outside the calls')
  t.equal(updated[0], uri)
})

t.test('a prompt the upstream does not list is asked of it, and answered in its words', async (t) => {
  const own = await direct(t)
  const { app } = await serveUpstream(t, everythingStdio)
  const err = (await own.client.getPrompt({ name: 'nope', arguments: { a: '1' } }).then(() => undefined, (e: { code: number; message: string }) => e))!
  const expected = { code: err.code, message: err.message.replace(/^MCP error -?\d+: /, '') }
  t.match(expected, { code: -32602, message: /nope/ }, "server-everything's own answer")
  t.same((await rpc(app, 'prompts/get', { name: 'nope', arguments: { a: '1' } }, { era: 'legacy' })).body.error, expected, 'on /mcp')
  const rest = await call(app, { url: '/prompts/nope', headers: { 'mcp-arguments': '{"a":"1"}' } })
  t.same([rest.status, rest.body], [400, expected], 'on REST, with the status the binding gives its code')
})
