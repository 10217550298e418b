import t from 'tap'
import type { FastifyRequest } from 'fastify'
import { McpServer } from '../../src/core/mcp-server.js'
import type { Principal } from '../../src/core/request-context.js'
import { McpError } from '../../src/errors.js'
import { MemoryStore } from '../../src/store/memory.js'
import { build, call } from '../helpers/helper.js'

// The seam the OAuth issue plugs into: `authenticate` names the principal of each request.
async function authenticate(request: FastifyRequest): Promise<Principal> {
  const who = request.headers['x-user']
  if (who === 'error') throw Object.assign(new Error('Upstream said no'), { statusCode: 403 })
  if (typeof who !== 'string') {
    throw new McpError(-32600, 'Authentication required', 401, undefined, { 'www-authenticate': 'Bearer realm="mcp"' })
  }
  return { id: `test|${who}`, issuer: 'test', subject: who, scopes: [], anonymous: false }
}

t.test('authenticate: the principal reaches handlers and owns its connection state', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'whoami' }, (_args, ctx) => ctx.principal.subject ?? 'nobody')
  mcp.resource({ uri: 'x:r', name: 'r' }, () => 'r')
  const store = new MemoryStore()
  const { app } = await build(t, { mcp, store, authenticate })
  const alice = await call(app, { method: 'POST', url: '/tools/whoami/calls', payload: {}, headers: { 'x-user': 'alice' } })
  t.equal(alice.body.content[0].text, 'alice')
  await app.inject({ method: 'POST', url: '/resources/subscribe', payload: { uri: 'x:r' }, headers: { 'mcp-protocol-version': '2025-11-25', 'x-user': 'alice' } })
  await app.inject({ method: 'POST', url: '/logLevel', payload: { level: 'error' }, headers: { 'mcp-protocol-version': '2025-11-25', 'x-user': 'bob' } })
  t.same(await store.connections.subscriptions('test|alice'), ['x:r'])
  t.same(await store.connections.subscriptions('test|bob'), [], 'bob does not see alice subscriptions')
  t.equal(await store.connections.getLogLevel('test|alice'), undefined)
  t.equal(await store.connections.getLogLevel('test|bob'), 'error')
})

t.test('authenticate refusals keep their status and headers', async (t) => {
  const { app } = await build(t, { authenticate })
  const anon = await call(app, { url: '/tools' })
  t.same([anon.status, anon.body], [401, { code: -32600, message: 'Authentication required' }])
  t.equal(anon.headers['www-authenticate'], 'Bearer realm="mcp"')
  t.equal(anon.headers['mcp-protocol-version'], '2026-07-28')
  const other = await call(app, { url: '/tools', headers: { 'x-user': 'error' } })
  t.same([other.status, other.body], [403, { code: -32600, message: 'Upstream said no' }], 'a 4xx from a hook keeps its status')
})
