import t, { type Test } from 'tap'
import { connect, type AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer, type BuildServerOptions } from '../../src/server.js'

/** A demo server listening on 127.0.0.1 (a free port), closed when the test ends. */
async function listening(t: Test, options: Partial<BuildServerOptions> = {}): Promise<{ app: FastifyInstance; port: number }> {
  const app = await buildServer({ logger: false, mcp: createDemoServer(), ...options })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { app, port: (app.server.address() as AddressInfo).port }
}

interface Raw {
  status: number
  headers: Record<string, string>
  body: any
  text: string
}

/** Send raw bytes on a fresh socket and read the one answer until the server closes. */
function raw(port: number, bytes: string | Buffer): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (c) => chunks.push(c))
    socket.on('error', reject)
    socket.on('close', () => resolve(parse(Buffer.concat(chunks).toString('utf8'))))
    socket.write(bytes)
  })
}

function parse(text: string): Raw {
  const [head, ...rest] = text.split('\r\n\r\n')
  const lines = head!.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':')
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim()
  }
  const body = rest.join('\r\n\r\n')
  let json: unknown
  try {
    json = body === '' ? undefined : JSON.parse(body)
  } catch {}
  return { status: Number(lines[0]!.split(' ')[1]), headers, body: json, text: body }
}

function request(port: number, method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<Raw> {
  const payload = body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')
  const lines = [`${method} ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Connection: close']
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${payload.length}`)
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`)
  return raw(port, Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), payload]))
}

/** Our error shape and headers on an answer. */
function ours(t: Test, res: Raw, status: number, code: number, what: string): void {
  t.equal(res.status, status, `${what}: status`)
  t.equal(res.body?.code, code, `${what}: JSON-RPC code`)
  t.type(res.body?.message, 'string', `${what}: message`)
  t.notOk('statusCode' in (res.body ?? {}) || 'error' in (res.body ?? {}), `${what}: not Fastify's shape`)
  t.match(res.headers['content-type'], /^application\/json/, `${what}: JSON`)
  t.ok(res.headers['mcp-protocol-version'], `${what}: Mcp-Protocol-Version`)
  t.ok(res.headers['mcp-request-id'], `${what}: Mcp-Request-Id`)
}

t.test("Fastify's own errors are in the binding's shape, with its headers", async (t) => {
  const { port } = await listening(t)
  ours(t, await request(port, 'GET', '/resources/%E0%A4%A'), 400, -32600, 'bad percent-encoding')
  const long = `/resources/${'a'.repeat(5000)}`
  const tooLong = await request(port, 'GET', long)
  ours(t, tooLong, 414, -32600, 'a parameter over 4096 characters')
  t.notMatch(tooLong.text, 'aaaaaaaaaa', 'the path is not echoed')
  for (const method of ['TRACE', 'PROPFIND', 'MKCOL', 'PURGE']) {
    const res = await request(port, method, '/tools')
    ours(t, res, 405, -32601, `${method} on a known path`)
    t.equal(res.headers.allow, 'GET, HEAD', `${method}: Allow`)
  }
  ours(t, await request(port, 'PROPFIND', '/nowhere'), 404, -32601, 'unknown method, unknown path')
  ours(t, await request(port, 'GET', '/nowhere'), 404, -32601, 'unknown path')
  ours(t, await request(port, 'POST', '/tools/echo/calls', '{"arguments":', {}), 400, -32700, 'JSON syntax')
  ours(t, await raw(port, `POST /tools/echo/calls HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\nContent-Type: text/xml\r\nContent-Length: 2\r\n\r\nab`), 415, -32600, 'content type')
})

t.test('a body too large, under a prefix: the root answers in our shape too', async (t) => {
  const { port } = await listening(t, { bodyLimit: 1024, prefix: '/mcp-http' })
  ours(t, await request(port, 'POST', '/mcp-http/tools/echo/calls', JSON.stringify({ arguments: { text: 'x'.repeat(2000) } })), 413, -32600, 'too large')
  ours(t, await request(port, 'GET', '/elsewhere'), 404, -32601, 'outside the prefix')
  ours(t, await request(port, 'GET', '/mcp-http/resources/%E0%A4%A'), 400, -32600, 'bad URL under a prefix')
})

t.test("a route of the application's own, outside the MCP plugin: Fastify's JSON errors in our shape", async (t) => {
  const app = await buildServer({ logger: false, mcp: createDemoServer(), prefix: '/mcp-http' })
  app.post('/custom', async (request) => ({ got: request.body }))
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const { port } = app.server.address() as AddressInfo
  t.same((await request(port, 'POST', '/custom', '{"a":1}')).body, { got: { a: 1 } }, 'a good body reaches the route')
  ours(t, await request(port, 'POST', '/custom', '{"a":'), 400, -32700, 'JSON syntax, at the root')
  ours(t, await request(port, 'POST', '/custom', ''), 400, -32600, 'an empty JSON body, at the root')
})

t.test('bodies: invalid UTF-8 is refused, __proto__ is named, 1e309 is refused, depth is bounded', async (t) => {
  const { port } = await listening(t)
  const bad = Buffer.concat([Buffer.from('{"arguments":{"text":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')])
  const utf8 = await request(port, 'POST', '/tools/echo/calls', bad)
  ours(t, utf8, 400, -32700, 'invalid UTF-8')
  t.match(utf8.body.message, /UTF-8/, 'says UTF-8')

  const proto = await request(port, 'POST', '/tools/echo/calls', '{"arguments":{"text":"a","__proto__":{"x":1}}}')
  ours(t, proto, 400, -32602, '__proto__')
  t.match(proto.body.message, /"__proto__".*refused/, 'says which key is refused')

  const huge = await request(port, 'POST', '/tools/add/calls', '{"arguments":{"a":1e309,"b":1}}')
  ours(t, huge, 400, -32602, '1e309')
  t.match(huge.body.message, /finite/, 'says numbers must be finite')

  const sum = await request(port, 'POST', '/tools/add/calls', '{"arguments":{"a":1e308,"b":1e308}}')
  t.equal(sum.status, 200, 'a sum out of range is a tool result')
  t.equal(sum.body.isError, true, 'an isError result, not an output that breaks its schema')
  t.match(sum.body.content[0].text, /out of range/)

  const deep = `{"arguments":{"text":"a","x":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`
  const res = await request(port, 'POST', '/tools/echo/calls', deep)
  ours(t, res, 400, -32602, 'a 10,000-deep array')
  t.match(res.body.message, /deeper than 64 levels/, 'names the limit')
  const rpc = await request(port, 'POST', '/mcp', `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`, {
    accept: 'application/json, text/event-stream'
  })
  t.equal(rpc.status, 400, '/mcp face: 400')
  t.match(JSON.stringify(rpc.body), /deeper than 64 levels/, '/mcp face names the limit')
  const header = await request(port, 'GET', '/prompts/greeting', undefined, { 'Mcp-Arguments': `{"name":${'['.repeat(5000)}${']'.repeat(5000)}}` })
  ours(t, header, 400, -32602, 'a deep Mcp-Arguments header')
  t.match(header.body.message, /Mcp-Arguments.*deeper than 64 levels/, 'names the header and the limit')
  const ok = await request(port, 'POST', '/tools/echo/calls', `{"arguments":{"text":"a"},"_meta":{"x":${'['.repeat(60)}${']'.repeat(60)}}}`)
  t.equal(ok.status, 200, 'nesting within the limit passes')
})

t.test('Host: loopback names on its port by default, and only well-formed ones', async (t) => {
  const { app, port } = await listening(t)
  t.equal((await app.inject({ url: '/ping', headers: { 'mcp-protocol-version': '2025-11-25', host: 'evil.example' } })).statusCode, 202, 'inject() is in-process: not checked')
  const ping = (host: string) => raw(port, `GET /ping HTTP/1.1\r\nMcp-Protocol-Version: 2025-11-25\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
  t.equal((await ping(`127.0.0.1:${port}`)).status, 202, 'its loopback address')
  t.equal((await ping(`localhost:${port}`)).status, 202, 'localhost')
  ours(t, await ping('evil.example'), 403, -32600, 'another name (DNS rebinding)')
  ours(t, await ping(`localhost:${port + 1}`), 403, -32600, 'another port')
  ours(t, await ping(`127.0.0.1:${port}:${port}`), 403, -32600, 'a port twice')
  const origin = await raw(port, `GET /ping HTTP/1.1\r\nMcp-Protocol-Version: 2025-11-25\r\nHost: 127.0.0.1:${port}\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n`)
  ours(t, origin, 403, -32600, 'a foreign Origin')
  t.equal((await raw(port, 'GET /health HTTP/1.1\r\nHost: anything\r\nConnection: close\r\n\r\n')).status, 200, 'probes are not checked')
})

t.test('Host: a list given is used; an explicit port twice is refused even there', async (t) => {
  const { port } = await listening(t, { allowedHosts: ['127.0.0.1'] })
  const ping = (host: string) => raw(port, `GET /ping HTTP/1.1\r\nMcp-Protocol-Version: 2025-11-25\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
  t.equal((await ping(`127.0.0.1:${port}`)).status, 202, 'a name without port allows any port')
  t.equal((await ping(`127.0.0.1:${port}:${port}`)).status, 403, 'but not a malformed Host')
  t.equal((await ping(`localhost:${port}`)).status, 403, 'the list replaces the default')
})

t.test('Host: off the loopback address, any Host, and a warning at start', async (t) => {
  const lines: string[] = []
  const stream = { write: (l: string) => lines.push(l) }
  const app = await buildServer({ logger: { level: 'warn', stream } as never, mcp: createDemoServer() })
  await app.listen({ host: '0.0.0.0', port: 0 })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  t.match(lines.join(''), /non-loopback address with no allowedHosts/, 'warned')
  t.equal((await raw(port, 'GET /ping HTTP/1.1\r\nMcp-Protocol-Version: 2025-11-25\r\nHost: mcp.example\r\nConnection: close\r\n\r\n')).status, 202, 'any Host')
})

t.test('a client that sends half a body is cut off after requestTimeoutMs', async (t) => {
  const { port } = await listening(t, { requestTimeoutMs: 300 })
  const res = await raw(
    port,
    `POST /tools/echo/calls HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"arguments":{"text":"`
  )
  t.equal(res.status, 408, '408 Request Timeout, then the connection closes')
  t.equal(res.body.code, -32600, 'in our shape')
  t.ok(res.headers['mcp-request-id'] && res.headers['mcp-protocol-version'], 'with our headers')
})

t.test('shutdown: a request on a kept-alive connection gets our 503 and Connection: close', async (t) => {
  const app = await buildServer({ logger: false, mcp: createDemoServer() })
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  // A slow route keeps the server closing while the second request arrives on the same connection.
  app.get('/hold', async () => {
    await held
    return { ok: true }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  const socket = connect(port, '127.0.0.1')
  let text = ''
  socket.on('data', (c) => (text += c.toString()))
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  const other = connect(port, '127.0.0.1')
  other.write(`GET /hold HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  socket.write(`GET /ping HTTP/1.1\r\nMcp-Protocol-Version: 2025-11-25\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  while (!text.includes('202 Accepted')) await new Promise((resolve) => setTimeout(resolve, 10))
  const closing = app.close()
  // The idle connection is closed cleanly by close(); a busy one answers its next request with 503.
  await closed
  t.pass('the idle keep-alive connection was closed, not left open')
  const otherText = new Promise<string>((resolve) => {
    let s = ''
    other.on('data', (c) => (s += c.toString()))
    other.on('close', () => resolve(s))
  })
  other.write(`GET /ping HTTP/1.1\r\nMcp-Protocol-Version: 2025-11-25\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  await new Promise((resolve) => setTimeout(resolve, 50))
  release()
  await closing
  const answers = (await otherText).split('HTTP/1.1 ').slice(1)
  t.match(answers[0], /^200/, 'the held request finished')
  const after = parse(`HTTP/1.1 ${answers[1]}`)
  t.equal(after.status, 503, 'the next request on that connection: 503')
  t.equal(after.body.code, -32603, 'in our shape')
  t.equal(after.headers.connection, 'close', 'Connection: close')
  t.ok(after.headers['retry-after'] && after.headers['mcp-request-id'] && after.headers['mcp-protocol-version'], 'Retry-After and our headers')
})

t.test('requestTimeoutMs: 30 s by default, headers within it; 0 turns it off', async (t) => {
  const byDefault = await buildServer({ logger: false, mcp: createDemoServer() })
  t.teardown(() => byDefault.close())
  t.equal(byDefault.server.requestTimeout, 30_000)
  t.equal(byDefault.server.headersTimeout, 30_000, 'headers must arrive within the same time')
  const off = await buildServer({ logger: false, mcp: createDemoServer(), requestTimeoutMs: 0 })
  t.teardown(() => off.close())
  t.equal(off.server.requestTimeout, 0)
})

t.test('loopbackByDefault: false keeps any Host on loopback', async (t) => {
  const { port } = await listening(t, { loopbackByDefault: false })
  t.equal((await raw(port, 'GET /ping HTTP/1.1\r\nMcp-Protocol-Version: 2025-11-25\r\nHost: mcp.example\r\nConnection: close\r\n\r\n')).status, 202)
})
