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

/** The fields of one protobuf message, in order: varints as numbers, the rest as bytes. */
function protoFields(buf: Buffer): Array<[number, number | Buffer]> {
  const out: Array<[number, number | Buffer]> = []
  let i = 0
  const varint = (): number => {
    let n = 0n
    let shift = 0n
    for (;;) {
      const b = buf[i++]!
      n |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return Number(n)
      shift += 7n
    }
  }
  while (i < buf.length) {
    const key = varint()
    const wire = key & 7
    if (wire === 0) out.push([key >>> 3, varint()])
    else if (wire === 1) out.push([key >>> 3, buf.subarray(i, (i += 8))])
    else if (wire === 5) out.push([key >>> 3, buf.subarray(i, (i += 4))])
    else if (wire === 2) {
      const len = varint()
      out.push([key >>> 3, buf.subarray(i, (i += len))])
    } else throw new Error(`unexpected protobuf wire type ${wire}`)
  }
  return out
}

const all = (buf: Buffer, no: number) => protoFields(buf).filter(([n]) => n === no).map(([, v]) => v as Buffer)
const one = (buf: Buffer, no: number) => protoFields(buf).find(([n]) => n === no)?.[1]
const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : '')
const hex = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : '')

/** OTLP's AnyValue (protobuf) as the plain value the JSON form gives. */
function anyValue(buf: Buffer): unknown {
  const [no, v] = protoFields(buf)[0] ?? [0, undefined]
  if (no === 1) return text(v)
  if (no === 2) return v === 1
  if (no === 3) return v
  if (no === 4) return (v as Buffer).readDoubleLE(0)
  return v
}
const protoAttributes = (buf: Buffer, no: number) => Object.fromEntries(all(buf, no).map((kv) => [text(one(kv, 1)), anyValue(one(kv, 2) as Buffer ?? Buffer.alloc(0))]))

/** An `ExportTraceServiceRequest` in its protobuf encoding (`http/protobuf`), as spans. */
function protoSpans(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = []
  for (const rs of all(body, 1)) {
    const resource = one(rs, 1)
    const service = Buffer.isBuffer(resource) ? protoAttributes(resource, 1)['service.name'] : undefined
    for (const ss of all(rs, 2)) {
      for (const s of all(ss, 2)) {
        const status = one(s, 15)
        spans.push({
          traceId: hex(one(s, 1)),
          spanId: hex(one(s, 2)),
          parentSpanId: hex(one(s, 4)),
          name: text(one(s, 5)),
          kind: (one(s, 6) as number | undefined) ?? 0,
          status: Buffer.isBuffer(status) ? { ...(one(status, 3) === undefined ? {} : { code: one(status, 3) as number }), ...(one(status, 2) === undefined ? {} : { message: text(one(status, 2)) }) } : {},
          attributes: protoAttributes(s, 9),
          links: all(s, 13).map((l) => ({ traceId: hex(one(l, 1)), spanId: hex(one(l, 2)), attributes: protoAttributes(l, 4) })),
          service
        })
      }
    }
  }
  return spans
}

/**
 * An OTLP/HTTP receiver on 127.0.0.1 for the tests: it takes what the real exporter POSTs to
 * /v1/traces, in the JSON or the protobuf encoding, and keeps every span, decoded.
 */
export async function otlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; posts: string[]; close: () => Promise<void> }> {
  const spans: ReceivedSpan[] = []
  const posts: string[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      posts.push(`${req.method} ${req.url} ${req.headers['content-type']}`)
      if (req.headers['content-type'] === 'application/x-protobuf') {
        if (req.url === '/v1/traces') spans.push(...protoSpans(Buffer.concat(chunks)))
        return void res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
      }
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
