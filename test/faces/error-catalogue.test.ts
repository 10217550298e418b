import { readFile, readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { McpError, catalogue, errors, wireErrorOf, type CatalogueEntry, type McpErrorName } from '../../src/errors.js'
import { NotReplicated, QueueFull, QuotaExceeded, StoreFull, StoreUnavailable, TooManySubscriptions, TooManyTasks } from '../../src/store/store-errors.js'
import { build, call, json } from '../helpers/helper.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** One call of every constructor of `errors`, with arguments of the right kind. */
const samples: { [K in keyof typeof errors]: () => McpError } = {
  parse: () => errors.parse(),
  invalidRequest: () => errors.invalidRequest('m'),
  invalidParams: () => errors.invalidParams('m'),
  methodNotFound: () => errors.methodNotFound(),
  methodNotAllowed: () => errors.methodNotAllowed(['GET', 'POST']),
  notFound: () => errors.notFound('m'),
  headerMismatch: () => errors.headerMismatch('m'),
  missingCapability: () => errors.missingCapability({ sampling: {} }),
  unsupportedVersion: () => errors.unsupportedVersion('1999-01-01', ['2026-07-28']),
  payloadTooLarge: () => errors.payloadTooLarge(),
  unsupportedMediaType: () => errors.unsupportedMediaType(),
  internal: () => errors.internal(),
  unauthorized: () => errors.unauthorized('m', 'Bearer'),
  forbidden: () => errors.forbidden('m'),
  insufficientScope: () => errors.insufficientScope('tool x', ['a']),
  unavailable: () => errors.unavailable('m', 5),
  unknownTool: () => errors.unknownTool('x'),
  unknownPrompt: () => errors.unknownPrompt('x'),
  unknownResourceTemplate: () => errors.unknownResourceTemplate('x://{y}'),
  resourceNotFound: () => errors.resourceNotFound('x://y', 'modern'),
  unknownTask: () => errors.unknownTask('x'),
  unknownRequest: () => errors.unknownRequest('x'),
  unknownMessageGroup: () => errors.unknownMessageGroup('x'),
  unknownWebhook: () => errors.unknownWebhook('x'),
  unknownSession: () => errors.unknownSession(),
  uriTooLong: () => errors.uriTooLong(),
  requestTimeout: () => errors.requestTimeout(),
  headersTooLarge: () => errors.headersTooLarge(),
  malformedHttp: () => errors.malformedHttp(),
  http: () => errors.http(418, 'm'),
  rateLimited: () => errors.rateLimited(2, 10, '10 seconds', 10),
  authRateLimited: () => errors.authRateLimited(2, 10, 10),
  tooManyStreams: () => errors.tooManyStreams(100, '5'),
  streamsFull: () => errors.streamsFull('5'),
  tooManyRounds: () => errors.tooManyRounds(10, 3),
  callRunning: () => errors.callRunning('k'),
  callMismatch: () => errors.callMismatch('k'),
  overloaded: () => errors.overloaded(5),
  notReady: () => errors.notReady(5),
  shuttingDown: () => errors.shuttingDown(),
  authUnavailable: () => errors.authUnavailable(5),
  outputSchema: () => errors.outputSchema('x', 'p'),
  upstream: () => errors.upstream(-32099, 'm', 502),
  upstreamFailed: () => errors.upstreamFailed('m'),
  upstreamClosed: () => errors.upstreamClosed('u'),
  upstreamTimeout: () => errors.upstreamTimeout('u'),
  upstreamBadAnswer: () => errors.upstreamBadAnswer('m'),
  upstreamDown: () => errors.upstreamDown('m', 5),
  upstreamRequestRefused: () => errors.upstreamRequestRefused('m'),
  userTokenRequired: () => errors.userTokenRequired('u'),
  tokenExchangeRefused: () => errors.tokenExchangeRefused('u', 'invalid_grant'),
  tokenNotForwardable: () => errors.tokenNotForwardable('u'),
  tokenExchangeFailed: () => errors.tokenExchangeFailed('u', 'answered 503'),
  relayed: () => errors.relayed({ name: 'MCP_ERR_UNKNOWN_TOOL', code: -32602, message: 'Unknown tool: x', status: 404 })
}

/** The wire errors the store's refusals become, each with the store error's code. */
const storeRefusals = [
  new QueueFull(10),
  new TooManySubscriptions(10),
  new TooManyTasks(10, 1000),
  new NotReplicated('m'),
  new StoreFull('tasks', 10, 1000),
  new QuotaExceeded('tasks', 10, 1000),
  new StoreUnavailable()
]

/** Whether `error` is what its catalogue entry says: code, status and exactly the headers listed. */
function agrees(t: Test, error: McpError, label: string): void {
  t.ok(error instanceof McpError, `${label} is an McpError`)
  t.ok(Object.hasOwn(catalogue, error.name), `${label}: ${error.name} is in the catalogue`)
  const entry: CatalogueEntry = catalogue[error.name as McpErrorName]
  if (typeof entry.rpc === 'number') t.equal(error.code, entry.rpc, `${label}: JSON-RPC code`)
  if (typeof entry.status === 'number') t.equal(error.status, entry.status, `${label}: status`)
  t.same(Object.keys(error.headers ?? {}).sort(), [...(entry.headers ?? [])].sort(), `${label}: headers`)
}

t.test('every constructor answers what its catalogue entry says, and every entry has a constructor', async (t) => {
  t.same(Object.keys(samples).sort(), Object.keys(errors).sort(), 'a sample for every constructor')
  const made = new Set<string>(['MCP_ERR_APPLICATION'])
  for (const [key, make] of Object.entries(samples)) {
    const error = make()
    agrees(t, error, `errors.${key}`)
    made.add(error.name)
  }
  made.add(errors.resourceNotFound('x://y', 'legacy').name)
  for (const refusal of storeRefusals) {
    const error = wireErrorOf(refusal)!
    agrees(t, error, refusal.code)
    t.equal(error.name, `MCP_${refusal.code}`, `${refusal.code} keeps its name`)
    made.add(error.name)
  }
  t.same([...made].sort(), Object.keys(catalogue).sort(), 'every entry is made by something')
})

t.test('worded entries answer their words, and the wire stays the JSON-RPC error object', async (t) => {
  t.equal(errors.parse().message, 'Parse error: the body is not valid JSON')
  t.equal(errors.internal().message, 'Internal error')
  t.equal(errors.shuttingDown().message, 'The server is shutting down: retry on another connection')
  t.same(errors.unknownTool('x').toJSON(), { code: -32602, message: 'Unknown tool: x' })
  t.same(JSON.parse(JSON.stringify(errors.methodNotAllowed(['GET']))), { code: -32601, message: 'Method not allowed', data: { allow: ['GET'] } })
  t.equal(String(errors.unknownTool('x')), 'MCP_ERR_UNKNOWN_TOOL: Unknown tool: x', 'the name leads the text')
})

t.test('a rendering of an error keeps its name; an application error is named', async (t) => {
  const inBand = errors.unknownTool('x').with({ status: 200 })
  t.match(inBand, { name: 'MCP_ERR_UNKNOWN_TOOL', code: -32602, status: 200, message: 'Unknown tool: x' })
  const challenged = errors.insufficientScope('tool x', ['a']).with({ headers: { 'www-authenticate': 'Bearer x' } })
  t.match(challenged, { name: 'MCP_ERR_INSUFFICIENT_SCOPE', status: 403, headers: { 'www-authenticate': 'Bearer x' } })
  t.equal(new McpError(-32000, 'm', 400).name, 'MCP_ERR_APPLICATION')
  t.equal(new McpError(-32000, 'm', 400, undefined, undefined, 'MY_ERR').name, 'MY_ERR')
  t.equal(errors.relayed({ name: 'nonsense', code: -32000, message: 'm', status: 400 }).name, 'MCP_ERR_UPSTREAM', 'a relayed name not in the catalogue')
  t.equal(errors.notFound('m', -32002).name, 'MCP_ERR_APPLICATION', 'notFound with a code of its own')
})

/** The rows of docs/errors.md's table: name, JSON-RPC, HTTP, headers. */
async function documented(): Promise<Map<string, { rpc: string; status: string; headers: string[] }>> {
  const text = await readFile(join(root, 'docs', 'errors.md'), 'utf8')
  const rows = new Map<string, { rpc: string; status: string; headers: string[] }>()
  for (const line of text.split('\n')) {
    const m = /^\| `(MCP_ERR_[A-Z_]+)` \|([^|]*)\|([^|]*)\|([^|]*)\|/.exec(line)
    if (m === null) continue
    const headers = [...m[4]!.matchAll(/`([^`]+)`/g)].map((h) => h[1]!.toLowerCase())
    rows.set(m[1]!, { rpc: m[2]!.trim(), status: m[3]!.trim(), headers })
  }
  return rows
}

t.test('docs/errors.md lists the catalogue: every name, its code, status and headers', async (t) => {
  const rows = await documented()
  t.same([...rows.keys()].sort(), Object.keys(catalogue).sort(), 'the same names')
  for (const [name, entry] of Object.entries(catalogue) as [string, CatalogueEntry][]) {
    const row = rows.get(name)
    if (row === undefined) continue
    t.equal(row.rpc, String(entry.rpc), `${name}: JSON-RPC code`)
    t.equal(row.status, String(entry.status), `${name}: status`)
    t.same(row.headers, [...(entry.headers ?? [])], `${name}: headers`)
  }
})

/** The TypeScript files under `dir`, recursively. */
async function sources(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    if (e.isDirectory()) out.push(...(await sources(path)))
    else if (e.name.endsWith('.ts')) out.push(path)
  }
  return out
}

t.test('no McpError is built outside the catalogue module', async (t) => {
  const offenders: string[] = []
  for (const dir of ['src', 'routes', 'bin']) {
    for (const file of await sources(join(root, dir))) {
      const rel = relative(root, file)
      if (rel === join('src', 'errors.ts')) continue
      const text = await readFile(file, 'utf8')
      text.split('\n').forEach((line, i) => {
        if (/new McpError\s*\(/.test(line)) offenders.push(`${rel}:${i + 1}: ${line.trim()}`)
      })
    }
  }
  t.same(offenders, [], 'use an errors.* constructor (src/errors.ts), or error.with() to render one')
})

t.test('the log names an error answer by its catalogue name', async (t) => {
  const lines: string[] = []
  const { app } = await build(t, { logger: { level: 'debug', stream: { write: (l: string) => lines.push(l) } } as never })
  const res = await call(app, { method: 'POST', url: '/tools/nope/calls', ...json({}) })
  t.equal(res.status, 404)
  t.same(res.body, { code: -32602, message: 'Unknown tool: nope' }, 'the wire carries no name')
  const logged = lines.map((l) => JSON.parse(l) as { mcpError?: string; status?: number }).filter((l) => l.mcpError !== undefined)
  t.match(logged, [{ mcpError: 'MCP_ERR_UNKNOWN_TOOL', status: 404 }])
})
