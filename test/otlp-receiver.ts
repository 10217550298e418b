import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One span as the OTLP/HTTP JSON body carries it, attributes flattened to plain values. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  kind: number
  status: { code?: number; message?: string }
  attributes: Record<string, unknown>
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>
  service: unknown
}

type KeyValue = { key: string; value: Record<string, unknown> }

const valueOf = (v: Record<string, unknown>): unknown =>
  'stringValue' in v ? v.stringValue : 'intValue' in v ? Number(v.intValue) : 'boolValue' in v ? v.boolValue : 'doubleValue' in v ? v.doubleValue : v
const flat = (kvs: KeyValue[] | undefined) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]))

/**
 * An OTLP/HTTP receiver on 127.0.0.1 for the tests: it takes what the real exporter POSTs to
 * /v1/traces (JSON encoding) and keeps every span, decoded.
 */
export async function otlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; posts: string[]; close: () => Promise<void> }> {
  const spans: ReceivedSpan[] = []
  const posts: string[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      posts.push(`${req.method} ${req.url} ${req.headers['content-type']}`)
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      for (const rs of body.resourceSpans ?? []) {
        const service = flat(rs.resource?.attributes)['service.name']
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              status: s.status ?? {},
              attributes: flat(s.attributes),
              links: (s.links ?? []).map((l: { traceId: string; spanId: string; attributes?: KeyValue[] }) => ({ traceId: l.traceId, spanId: l.spanId, attributes: flat(l.attributes) })),
              service
            })
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, spans, posts, close: () => new Promise((resolve) => server.close(() => resolve())) }
}
