import t from 'tap'
import Fastify from 'fastify'
import { mcpPlugin } from '../../src/app.js'
import { mcpRequestId } from '../../src/headers.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'
import { DEMO_TOOLS } from '../helpers/helper.js'

t.test('the MCP routes mount under a prefix inside an existing app', async (t) => {
  const app = Fastify({ routerOptions: { maxParamLength: 4096 } })
  t.teardown(() => app.close())
  app.get('/health', async () => ({ ok: true }))
  await app.register(mcpPlugin, { prefix: '/mcp-http', mcp: createDemoServer() })
  await app.ready()
  const tools = await app.inject({ url: '/mcp-http/tools' })
  t.equal(tools.statusCode, 200)
  t.same(tools.json().tools.map((x: { name: string }) => x.name), DEMO_TOOLS)
  const call = await app.inject({ method: 'POST', url: '/mcp-http/tools/echo/calls', payload: { arguments: { text: 'hi' } } })
  t.equal(call.json().content[0].text, 'hi')
  const health = await app.inject({ url: '/health' })
  t.same(health.json(), { ok: true })
  t.notOk(health.headers['mcp-protocol-version'], 'the MCP hooks stay inside the plugin')
  const notMcp = await app.inject({ url: '/elsewhere' })
  t.equal(notMcp.statusCode, 404)
  t.notOk(notMcp.headers['mcp-protocol-version'], 'the app keeps its own 404 outside the prefix')
  const mcp404 = await app.inject({ url: '/mcp-http/nowhere' })
  t.same([mcp404.statusCode, mcp404.json().code], [404, -32601])
  const wrong = await app.inject({ method: 'DELETE', url: '/mcp-http/tools' })
  t.same([wrong.statusCode, wrong.headers.allow], [405, 'GET, HEAD'])
  const doc = (await app.inject({ url: '/mcp-http/openapi.json' })).json()
  t.ok(doc.paths['/mcp-http/tools/echo/calls'], 'the document names the prefixed paths')
  t.notOk(doc.paths['/health'], 'and only the MCP routes')
})

t.test('an app that takes request ids from Mcp-Request-Id still never echoes a malformed one', async (t) => {
  const app = Fastify({ requestIdHeader: 'mcp-request-id' })
  t.teardown(() => app.close())
  await app.register(mcpPlugin, { mcp: createDemoServer() })
  const bad = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-request-id': 'has space' } })
  t.equal(bad.statusCode, 400)
  t.match(bad.headers['mcp-request-id'], /^[\w-]{12}\.[0-9a-z]+$/, 'a fresh id of ours')
  const fine = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-request-id': 'ok-1' } })
  t.equal(fine.headers['mcp-request-id'], 'ok-1')
  const none = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.match(none.headers['mcp-request-id'], /^req-/, 'without a header, the app\'s own id')
})

t.test('genReqId: mcpRequestId makes the log\'s id the response\'s Mcp-Request-Id', async (t) => {
  const logged: string[] = []
  const stream = { write: (line: string) => void logged.push(JSON.parse(line).reqId) }
  const app = Fastify({ genReqId: mcpRequestId, logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  await app.register(mcpPlugin, { mcp: createDemoServer() })
  const given = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-request-id': 'mine-7' } })
  const none = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
  const again = await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.equal(given.headers['mcp-request-id'], 'mine-7')
  t.match(none.headers['mcp-request-id'], /^[\w-]{12}\.[0-9a-z]+$/)
  t.not(again.headers['mcp-request-id'], none.headers['mcp-request-id'], 'each request its own')
  for (const res of [given, none, again]) t.ok(logged.includes(res.headers['mcp-request-id'] as string), 'logged under the id the response carries')
})

t.test('buildServer takes a prefix too', async (t) => {
  const app = await buildServer({ mcp: createDemoServer(), logger: false, prefix: '/v1' })
  t.teardown(() => app.close())
  t.equal((await app.inject({ url: '/v1/discover' })).statusCode, 200)
  t.equal((await app.inject({ url: '/discover' })).statusCode, 404)
})

t.test('plugins that read what admission sets declare it: registered without it, they say so', async (t) => {
  const { default: idempotency } = await import('../../src/plugins/idempotency.js')
  const { default: rateLimits } = await import('../../src/plugins/rate-limit.js')
  const { default: streamSlots } = await import('../../src/plugins/stream-slots.js')
  for (const [name, plugin] of [['mcp-idempotency', idempotency], ['mcp-rate-limits', rateLimits], ['mcp-stream-slots', streamSlots]] as const) {
    const app = Fastify()
    t.teardown(() => app.close())
    app.register(plugin as never, {} as never)
    await t.rejects(async () => { await app.ready() }, { code: 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED', message: /mcp-admission/ }, `${name} needs mcp-admission first`)
  }
})
