import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'

export interface Delivery {
  headers: IncomingHttpHeaders
  body: string
}

export interface Receiver {
  url: string
  port: number
  /** Every request received, in order. */
  got: Delivery[]
  /** Resolves once `n` requests have arrived (bounded: 10 s, then it rejects naming what came). */
  waitFor(n: number): Promise<Delivery[]>
  close(): Promise<void>
}

/** How the receiver answers one request: a status, or a status with headers and a body, or never. */
export type Answer = number | { status: number; body?: string; headers?: Record<string, string> } | 'hang'

/**
 * A real webhook receiver on a loopback port. `answer` picks the answer to each request (by its
 * 0-based index; default 200).
 */
export async function startReceiver(answer: (n: number, d: Delivery) => Answer = () => 200, path = '/hook'): Promise<Receiver> {
  const got: Delivery[] = []
  const server: Server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (body += c))
    req.on('end', () => {
      const d = { headers: req.headers, body }
      const n = got.push(d) - 1
      const a = answer(n, d)
      if (a === 'hang') return
      const { status, body: text = 'ok', headers = {} } = typeof a === 'number' ? { status: a } : a
      res.writeHead(status, headers).end(text)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    got,
    async waitFor(n) {
      for (let i = 0; i < 1000 && got.length < n; i++) await new Promise((resolve) => setTimeout(resolve, 10))
      if (got.length < n) throw new Error(`expected ${n} deliveries, got ${got.length}: ${got.map((d) => d.body).join('\n')}`)
      return got
    },
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    }
  }
}
