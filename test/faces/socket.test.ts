import t, { type Test } from 'tap'
import { once } from 'node:events'
import { connect } from 'node:net'
import { request } from 'undici'
import { McpServer } from '../../src/core/mcp-server.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'

async function listen(t: Test, mcp: McpServer) {
  const app = await buildServer({ mcp, logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return `http://127.0.0.1:${port}`
}

t.test('over a real socket: headers, calls and ETag revalidation', async (t) => {
  const base = await listen(t, createDemoServer())
  const res = await request(`${base}/tools/echo/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-request-id': 'sock-1' },
    body: JSON.stringify({ arguments: { text: 'über' } })
  })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['mcp-request-id'], 'sock-1')
  t.equal(res.headers['mcp-protocol-version'], '2026-07-28')
  t.same(await res.body.json(), { content: [{ type: 'text', text: 'über' }], resultType: 'complete' })
  const list = await request(`${base}/tools`)
  const etag = list.headers.etag as string
  await list.body.dump()
  const revalidated = await request(`${base}/tools`, { headers: { 'if-none-match': etag } })
  t.equal(revalidated.statusCode, 304)
  t.equal(await revalidated.body.text(), '')
})

t.test('a client that goes away aborts the handler through ctx.signal', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  let started!: () => void
  const running = new Promise<void>((resolve) => (started = resolve))
  const aborted = new Promise<string>((resolve) => {
    mcp.tool({ name: 'wait' }, (_args, ctx) => {
      ctx.signal.addEventListener('abort', () => resolve(String((ctx.signal.reason as Error).message)))
      started()
      return new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('aborted')))
    })
  })
  const base = await listen(t, mcp)
  const controller = new AbortController()
  const pending = request(`${base}/tools/wait/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    signal: controller.signal
  }).catch((err: Error) => err.name)
  await running
  controller.abort()
  t.equal(await pending, 'AbortError')
  t.equal(await aborted, 'The client closed the connection')
})

t.test('a malformed request gets a JSON 400', async (t) => {
  const base = await listen(t, createDemoServer())
  const socket = connect(Number(new URL(base).port), '127.0.0.1')
  await once(socket, 'connect')
  socket.write('THIS IS NOT HTTP\r\n\r\n')
  let raw = ''
  socket.on('data', (d) => (raw += d))
  await once(socket, 'close')
  t.match(raw, /^HTTP\/1\.1 400 /)
  t.match(raw, /\r\nMcp-Protocol-Version: 2026-07-28\r\n/)
  t.same(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)), { code: -32600, message: 'Malformed HTTP request' })
})

t.test('oversized headers get a JSON error that points to the POST form', async (t) => {
  const base = await listen(t, createDemoServer())
  const { port } = new URL(base)
  const socket = connect(Number(port), '127.0.0.1')
  await once(socket, 'connect')
  socket.write(`GET /prompts/greeting HTTP/1.1\r\nHost: x\r\nMcp-Arguments: {"name":"${'x'.repeat(20000)}"}\r\n\r\n`)
  let raw = ''
  socket.on('data', (d) => (raw += d))
  await once(socket, 'close')
  t.match(raw, /^HTTP\/1\.1 431 /)
  t.same(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)), {
    code: -32600,
    message: 'Request headers too large: send the parameters in the body with POST'
  })
})
