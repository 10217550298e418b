import t from 'tap'
import fc from 'fast-check'
import * as v8 from 'node:v8'
import * as vm from 'node:vm'
import { request } from 'undici'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { buildServer } from '../../src/server.js'
import { createDemoServer } from '../../src/demo/catalogue.js'

/*
 * A property-based walk of the whole HTTP surface: every operation of the server's own
 * /openapi.json and the /mcp face, with generated valid and invalid inputs (paths, headers in both
 * encodings, bodies). For every answer: no 5xx but a 503 with Retry-After, every error in our shape
 * with our headers and no stack trace, every documented success matching its schema; and the
 * server still answers /health, with its heap bounded after a forced GC. Seeded, with a fixed run
 * count, so a failure replays and CI time stays fixed.
 */

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext resolution.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default
v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void

const SEED = 1612
const RUNS = 500
const RPC_RUNS = 200

type Schema = Record<string, any>
interface Operation { method: string; path: string; operationId: string; params: Schema[]; body?: Schema; responses: Record<string, any> }

const app = await buildServer({ mcp: createDemoServer({ taskStepMs: 1 }), logger: false })
await app.listen({ host: '127.0.0.1', port: 0 })
const { port } = app.server.address() as { port: number }
const origin = `http://127.0.0.1:${port}`

async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  const res = await request(origin + path, { method: method as 'GET', headers, body, headersTimeout: 15_000, bodyTimeout: 15_000 })
  // A stream that stays open (subscriptions/listen) is judged by its head; leaving it closes it.
  if (String(res.headers['content-type']).startsWith('text/event-stream')) {
    res.body.destroy()
    return { status: res.statusCode, headers: res.headers, raw: '' }
  }
  return { status: res.statusCode, headers: res.headers, raw: await res.body.text() }
}

const doc = JSON.parse((await send('GET', '/openapi.json', {})).raw)
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true })
addFormats(ajv)
ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc')

/** A local `#/components/...` reference, resolved (once per use; the document is small). */
function deref(s: Schema | undefined): Schema | undefined {
  let x = s
  for (let i = 0; x?.$ref !== undefined && i < 10; i++) {
    x = (x.$ref as string).slice(2).split('/').reduce((o: any, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc)
  }
  return x
}

const operations: Operation[] = []
for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
  for (const [method, op] of Object.entries<any>(item)) {
    if (typeof op !== 'object' || op.operationId === undefined) continue
    operations.push({
      method: method.toUpperCase(),
      path,
      operationId: op.operationId,
      params: (op.parameters ?? []).map(deref),
      body: deref(op.requestBody?.content?.['application/json']?.schema),
      responses: op.responses
    })
  }
}

// Names the demo really has, so valid inputs reach the handlers and not only the 404s.
async function listed(path: string, key: string, field: string): Promise<string[]> {
  const res = await send('GET', path, {})
  const items = JSON.parse(res.raw)[key] as Array<Record<string, string>> | undefined
  if (items === undefined) throw new Error(`${path}: ${res.status} ${res.raw.slice(0, 300)}`)
  return items.map((x) => x[field]!)
}
const NAMES: Record<string, string[]> = {
  name: [...(await listed('/tools', 'tools', 'name')), ...(await listed('/prompts', 'prompts', 'name'))],
  uri: [...(await listed('/resources', 'resources', 'uri')), 'demo://items/2', 'demo://items/999999'],
  taskId: ['never-was'],
  id: ['never-was']
}

// --- arbitraries --------------------------------------------------------------------------------

const ascii = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 })
const anyJson = fc.jsonValue({ maxDepth: 4 })
const deep = fc.integer({ min: 50, max: 20_000 }).map((n) => '['.repeat(n) + ']'.repeat(n))
const protoBody = fc.constantFrom('{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', '{"arguments":{"__proto__":[]}}')
const badUtf8 = fc.constant(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]).toString('latin1'))

/** Values that fit a JSON Schema (most of the time: patterns and formats are approximated). */
function fits(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema)
  if (s === undefined || depth > 4) return anyJson
  if ('const' in s) return fc.constant(s.const)
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum)
  const alternatives = s.anyOf ?? s.oneOf
  if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((a: Schema) => fits(a, depth + 1)))
  if (Array.isArray(s.allOf)) return fits(Object.assign({}, ...s.allOf.map(deref)), depth + 1)
  const type = Array.isArray(s.type) ? s.type[0] : s.type
  switch (type) {
    case 'object': {
      const props: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) props[k] = fits(v, depth + 1)
      return fc.record(props, { requiredKeys: (s.required ?? []).filter((k: string) => k in props) })
    }
    case 'array':
      return fc.array(fits(s.items, depth + 1), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 3, 3) })
    case 'string':
      if (s.format === 'uri') return fc.constantFrom('file:///tmp', 'https://example.com/x', 'demo://readme')
      return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 20, 20) })
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1000, max: Math.min(s.maximum ?? 1000, 1000) })
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: s.minimum ?? -1e6, max: s.maximum ?? 1e6 })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    default:
      return anyJson
  }
}

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } }
const meta = fc.record(
  {
    'io.modelcontextprotocol/clientCapabilities': fc.oneof(fc.constant(TASKS), fc.constant({ elicitation: {}, ...TASKS }), anyJson),
    progressToken: fc.oneof(fc.string({ maxLength: 8 }), fc.integer()),
    'io.modelcontextprotocol/logLevel': fc.constantFrom('debug', 'info', 'nope')
  },
  { requiredKeys: [] }
)
/** A JSON header as a client may send it: plain, in the `=?base64?…?=` form, or broken. */
const jsonHeader = (value: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 4, arbitrary: value.map((v) => JSON.stringify(v)).filter((v) => /^[\x20-\x7e]*$/.test(v)) },
    { weight: 4, arbitrary: value.map((v) => `=?base64?${Buffer.from(JSON.stringify(v)).toString('base64')}?=`) },
    { weight: 1, arbitrary: ascii },
    { weight: 1, arbitrary: fc.constantFrom('=?base64?!!!?=', '=?base64?wyg=?=', '{"a":', deepHeader()) }
  )
function deepHeader(): string {
  return '['.repeat(3000) + ']'.repeat(3000)
}

const pathValue = (name: string) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...(NAMES[name] ?? ['x'])).map(encodeURIComponent) },
    { weight: 2, arbitrary: fc.string({ maxLength: 30 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.constantFrom('%E0%A4%A', '%', '%zz', 'a'.repeat(5000), '..%2F..%2Fetc', '%00', '__proto__', 'constructor') }
  )

const headerValue = (p: Schema): fc.Arbitrary<string | undefined> => {
  switch (p.name) {
    case 'mcp-protocol-version':
      return fc.oneof({ weight: 6, arbitrary: fc.constantFrom(undefined, '2026-07-28', '2025-11-25', '2025-06-18') }, { weight: 1, arbitrary: fc.constantFrom('1999-01-01', 'x') })
    case 'mcp-meta':
      return fc.option(jsonHeader(meta), { nil: undefined })
    case 'mcp-arguments':
      return fc.option(jsonHeader(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }))), { nil: undefined })
    case 'mcp-input-responses':
      return fc.option(jsonHeader(anyJson), { nil: undefined })
    case 'mcp-request-state':
      return fc.option(ascii, { nil: undefined })
    default: // mcp-request-id and the like: usually a fresh token, sometimes anything
      return fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 4, arbitrary: fc.uuid() }, { weight: 1, arbitrary: ascii })
  }
}

const bodyFor = (op: Operation): fc.Arbitrary<string | undefined> =>
  op.body === undefined
    ? fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('{}', 'x') })
    : fc.oneof(
      { weight: 10, arbitrary: fits(op.body).map((v) => JSON.stringify(v)) },
      { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: fc.oneof(deep, protoBody, badUtf8, ascii) }
    )

const pureRequest = fc.constantFrom(...operations).chain((op) =>
  fc.record({
    op: fc.constant(op),
    path: fc.tuple(...[...op.path.matchAll(/\{(\w+)\}/g)].map((m) => pathValue(m[1]!)), fc.constant('')).map((values) => {
      let i = 0
      return op.path.replace(/\{(\w+)\}/g, () => values[i++] as string)
    }),
    query: fc.oneof({ weight: 6, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('?cursor=x', '?cursor=', '?cursor=%E0%A4%A', '?access_token=secret') }),
    headers: fc.tuple(...op.params.filter((p) => p.in === 'header').map((p) => headerValue(p).map((v) => [p.name, v] as const)), fc.constant(['', undefined] as const)),
    body: bodyFor(op),
    contentType: fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/json; charset=latin1') })
  })
)

const RPC_METHODS = ['initialize', 'ping', 'tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list', 'resources/read',
  'resources/templates/list', 'resources/subscribe', 'completion/complete', 'logging/setLevel', 'tasks/get', 'tasks/update',
  'tasks/cancel', 'notifications/cancelled', 'notifications/initialized', 'nope/nope']
const rpcRequest = fc.record({
  message: fc.oneof(
    { weight: 5, arbitrary: fc.record({ jsonrpc: fc.constant('2.0'), id: fc.oneof(fc.integer(), fc.string({ maxLength: 6 })), method: fc.constantFrom(...RPC_METHODS), params: fc.option(fc.record({ name: fc.constantFrom(...NAMES.name!), arguments: anyJson, uri: fc.constantFrom(...NAMES.uri!), _meta: meta }, { requiredKeys: [] }), { nil: undefined }) }, { requiredKeys: ['jsonrpc', 'method'] }).map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.oneof(deep, protoBody, badUtf8, ascii) }
  ),
  version: fc.constantFrom(undefined, '2026-07-28', '2025-11-25', '2025-06-18', 'x'),
  accept: fc.constantFrom('application/json, text/event-stream', 'application/json', '*/*')
})

// --- the properties -----------------------------------------------------------------------------

const STACK = /\n\s+at |node:internal|\.ts:\d+|\.js:\d+/
const validators = new Map<string, ((v: unknown) => boolean) | null>()
function documented(op: Operation, status: number): ((v: unknown) => boolean) | null {
  const key = `${op.operationId} ${status}`
  if (!validators.has(key)) {
    const schema = op.responses[String(status)]?.content?.['application/json']?.schema
    validators.set(key, schema === undefined ? null : ajv.compile({ $ref: 'doc#', ...rebase(schema) }))
  }
  return validators.get(key)!
}
/** A response schema with its `#/components/...` references pointed at the registered document. */
function rebase(schema: Schema): Schema {
  return JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"doc#/components/'))
}

const failures: string[] = []
function check(what: string, ok: boolean, detail: string) {
  if (!ok) failures.push(`${what}: ${detail}`)
  return ok
}

/** What every answer must be, whoever asked and however. */
function judge(label: string, res: { status: number; headers: Record<string, unknown>; raw: string }): boolean {
  const retryAfter = Number(res.headers['retry-after'])
  let good = check(label, res.status < 500 || (res.status === 503 && retryAfter > 0), `status ${res.status} ${res.raw.slice(0, 200)}`)
  good = check(label, !STACK.test(res.raw), `a stack trace or source path in the body: ${res.raw.slice(0, 200)}`) && good
  if (res.status >= 400) {
    good = check(label, String(res.headers['content-type']).startsWith('application/json'), `error content-type ${String(res.headers['content-type'])}`) && good
    good = check(label, typeof res.headers['mcp-request-id'] === 'string' && typeof res.headers['mcp-protocol-version'] === 'string', `error without our headers (${res.status})`) && good
  }
  return good
}

function errorShape(label: string, body: any): boolean {
  const ok = body !== null && typeof body === 'object' && Number.isInteger(body.code) && typeof body.message === 'string' &&
    Object.keys(body).every((k) => k === 'code' || k === 'message' || k === 'data')
  return check(label, ok, `not our error shape: ${JSON.stringify(body).slice(0, 200)}`)
}

gc()
const heapBefore = process.memoryUsage().heapUsed

t.test('every operation of /openapi.json, valid and invalid inputs', async (t) => {
  t.ok(operations.length >= 25, `the document lists the operations (${operations.length})`)
  const statuses = new Map<number, number>()
  await fc.assert(
    fc.asyncProperty(pureRequest, async (r) => {
      const headers: Record<string, string> = {}
      for (const [k, v] of r.headers) if (k !== '' && v !== undefined) headers[k] = v
      if (r.body !== undefined) headers['content-type'] = r.contentType
      const url = r.path + r.query
      const label = `${r.op.method} ${url.slice(0, 80)}`
      const res = await send(r.op.method, url, headers, r.body === undefined ? undefined : Buffer.from(r.body, 'latin1').toString('latin1'))
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      let good = judge(label, res)
      const isJson = String(res.headers['content-type']).startsWith('application/json')
      if (res.status >= 400 && isJson) good = errorShape(label, JSON.parse(res.raw)) && good
      if (res.status < 300 && isJson && res.raw !== '') {
        const valid = documented(r.op, res.status)
        if (valid !== null) good = check(label, valid(JSON.parse(res.raw)), `${res.status} does not match the documented schema: ${res.raw.slice(0, 200)}`) && good
      }
      const health = await send('GET', '/health', {})
      good = check(label, health.status === 200, `/health answered ${health.status} afterwards`) && good
      return good
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true }
  ).catch((err: Error) => t.fail(err.message.split('Counterexample')[0]!))
  t.same(failures, [], 'no answer broke a rule')
  const succeeded = [...statuses].reduce((n, [status, count]) => n + (status < 300 ? count : 0), 0)
  t.ok(succeeded > RUNS / 5, `valid inputs reached the handlers (${JSON.stringify([...statuses])})`)
  t.ok([...statuses.keys()].some((s) => s >= 400), 'invalid inputs were refused')
})

t.test('the /mcp face, valid and invalid messages', async (t) => {
  failures.length = 0
  await fc.assert(
    fc.asyncProperty(rpcRequest, async (r) => {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: r.accept }
      if (r.version !== undefined) headers['mcp-protocol-version'] = r.version
      const res = await send('POST', '/mcp', headers, r.message)
      const label = `POST /mcp ${r.message.slice(0, 80)}`
      const retryAfter = Number(res.headers['retry-after'])
      let good = check(label, res.status < 500 || (res.status === 503 && retryAfter > 0), `status ${res.status} ${res.raw.slice(0, 200)}`)
      good = check(label, !STACK.test(res.raw), `a stack trace in the body: ${res.raw.slice(0, 200)}`) && good
      if (String(res.headers['content-type']).startsWith('application/json') && res.raw !== '') {
        const body = JSON.parse(res.raw)
        if (body.error !== undefined) good = errorShape(label, body.error) && good
      }
      return good
    }),
    { seed: SEED, numRuns: RPC_RUNS, endOnFailure: true }
  ).catch((err: Error) => t.fail(err.message.split('Counterexample')[0]!))
  t.same(failures, [], 'no answer broke a rule')
})

t.test('the server is still well, and its heap bounded', async (t) => {
  t.teardown(() => app.close())
  t.equal((await send('GET', '/health', {})).status, 200)
  gc()
  const grown = process.memoryUsage().heapUsed - heapBefore
  t.ok(grown < 64 * 1024 * 1024, `heap grew ${Math.round(grown / 1024 / 1024)} MB over ${RUNS + RPC_RUNS} requests`)
})
