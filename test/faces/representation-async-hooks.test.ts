import t from 'tap'
import { Writable } from 'node:stream'
import type { InjectOptions } from 'fastify'
import { buildServer } from '../../src/server.js'
import { createDemoServer } from '../../src/demo/catalogue.js'

// An app's own async onSend hook (compression, a signature) runs after the route has sent. A route
// that answers after a promise (Mcp-Meta settles the version first, the legacy era reads the
// connection, a store answers later) must hand Fastify a promise that ends with the reply, or
// Fastify sends a second time while the hook still runs.
t.test('every kind of route, under an async onSend hook of the app, is sent once', async (t) => {
  const logged: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logged.push(JSON.parse(String(chunk)) as Record<string, unknown>)
      done()
    }
  })
  const app = await buildServer({ mcp: createDemoServer(), logger: { level: 'warn', stream } })
  let hooked = 0
  app.addHook('onSend', async (_request, reply, payload) => {
    await new Promise((resolve) => setImmediate(resolve))
    hooked++
    reply.header('x-signed', 'yes')
    return payload
  })
  t.teardown(() => app.close())
  const meta = { 'mcp-meta': JSON.stringify({ 'io.modelcontextprotocol/clientCapabilities': {} }) }
  const legacy = { 'mcp-protocol-version': '2025-11-25' }
  const json = { 'content-type': 'application/json' }
  const requests: [InjectOptions, number][] = []
  for (const headers of [{}, meta, legacy]) {
    for (const url of ['/tools', '/prompts', '/resources', '/resources/templates', '/discover', '/notifications', '/resources/demo%3A%2F%2Fitems%2F2']) {
      requests.push([{ url, headers }, 200])
    }
    requests.push([{ url: '/ping', headers: { ...headers, 'mcp-protocol-version': '2025-11-25' } }, 202])
    requests.push([{ url: '/prompts/greeting', headers: { ...headers, 'mcp-arguments': '{"name":"Ada"}' } }, 200])
    requests.push([{ method: 'POST', url: '/tools/echo/calls', headers: { ...headers, ...json }, payload: { arguments: { text: 'hi' } } }, 200])
    requests.push([{ method: 'POST', url: '/tools/nope/calls', headers: { ...headers, ...json }, payload: {} }, 404])
    requests.push([{ url: '/resources/demo%3A%2F%2Fitems%2F9', headers }, 404])
  }
  for (const id of ['once-1', 'once-1']) {
    requests.push([{ method: 'POST', url: '/tools/add/calls', headers: { ...json, 'mcp-request-id': id }, payload: { arguments: { a: 1, b: 2 } } }, 200])
  }
  let n = 0
  for (const [request, status] of requests) {
    const res = await app.inject(request)
    const what = `${request.method ?? 'GET'} ${request.url} ${JSON.stringify(request.headers)}`
    t.equal(res.statusCode, status, what)
    t.equal(res.headers['x-signed'], 'yes', `${what}: the hook's header is on the one response`)
    n++
  }
  t.equal(hooked, n, 'the hook ran once a request')
  t.same(logged.filter((l) => (l.level as number) >= 40 && l.reqId !== undefined).map((l) => l.msg), [], 'no request warned or failed (no second send)')
})
