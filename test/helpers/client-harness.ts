import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Test } from 'tap'
import type { McpServer } from '../../src/core/mcp-server.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'

export interface Live {
  url: string
  app: FastifyInstance
  mcp: McpServer
  /** Every request seen: method, url, status, its Mcp-Request-Id and parsed body. */
  seen: { method: string; url: string; status: number; id: string; body?: unknown }[]
}

/**
 * The demo server on a real socket (127.0.0.1:0), closed when the test ends. `fault` may answer a
 * request itself (return true when it did) before the server sees it.
 */
export async function liveDemo(
  t: Test,
  options: {
    mcp?: McpServer
    sessions?: boolean
    fault?: (request: FastifyRequest, reply: FastifyReply) => boolean
    /** Sees every answer before it is sent (may change its status). */
    onSend?: (request: FastifyRequest, reply: FastifyReply) => void
  } = {}
): Promise<Live> {
  const mcp = options.mcp ?? createDemoServer({ taskStepMs: 20 })
  const app = await buildServer({ logger: false, mcp, sessions: options.sessions })
  const seen: Live['seen'] = []
  app.addHook('onRequest', async (request, reply) => {
    if (options.fault?.(request, reply) === true) return reply
  })
  app.addHook('onSend', async (request, reply, payload) => {
    options.onSend?.(request, reply)
    return payload
  })
  app.addHook('onResponse', async (request, reply) => {
    seen.push({ method: request.method, url: request.url, status: reply.statusCode, id: String(request.headers['mcp-request-id']), body: request.body })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  // Without closeAllConnections, a socket a client opened but aborted before its request (the
  // fetch pool does that when a poller stops mid-connect) holds close() for the headers timeout.
  t.teardown(async () => {
    const closing = app.close()
    app.server.closeAllConnections()
    await closing
  })
  const { port } = app.server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, app, mcp, seen }
}

/** A scripted HTTP server: each request takes the next answer for its "METHOD path". */
export async function stub(
  t: Test,
  script: Record<string, Array<{ status: number; body?: unknown; headers?: Record<string, string> }>>
): Promise<{ url: string; requests: { key: string; body: string; headers: IncomingMessage['headers'] }[] }> {
  const requests: { key: string; body: string; headers: IncomingMessage['headers'] }[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', () => {
      const key = `${req.method} ${req.url}`
      requests.push({ key, body, headers: req.headers })
      const next = script[key]?.shift() ?? { status: 404, body: { code: -32601, message: `stub: ${key}` } }
      const text = next.body === undefined ? '' : typeof next.body === 'string' ? next.body : JSON.stringify(next.body)
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers })
      res.end(text)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests }
}
