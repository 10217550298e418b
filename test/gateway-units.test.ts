import t from 'tap'
import { McpServer } from '../src/core/mcp-server.js'
import { UpstreamCall } from '../src/gateway/call.js'
import { register } from '../src/gateway/catalogue.js'
import { Rounds, toWire } from '../src/gateway/rounds.js'
import { MemoryRelay } from '../src/gateway/relay.js'
import { LateLogger } from '../src/gateway/serve.js'
import { Cancelled, upstreamError } from '../src/gateway/errors.js'
import { Upstream } from '../src/gateway/upstream.js'
import { McpError } from '../src/errors.js'
import { ANONYMOUS } from '../src/core/request-context.js'
import { everythingStdio } from './gateway-helper.js'

const quiet = { debug() {}, info() {}, warn() {}, error() {} }

t.test('upstream errors as the client sees them', async (t) => {
  const bad = upstreamError(Object.assign(new Error('MCP error -32602: no such thing'), { code: -32602, data: { x: 1 } }), 'u')
  t.same([bad.constructor, (bad as McpError).code, (bad as McpError).status, bad.message, (bad as McpError).data], [McpError, -32602, 400, 'no such thing', { x: 1 }])
  t.equal((upstreamError(Object.assign(new Error('t'), { code: -32001 }), 'u') as McpError).status, 504)
  t.equal((upstreamError(Object.assign(new Error('odd'), { code: -31999 }), 'u') as McpError).status, 502, 'an unknown code: 502')
  const own = new McpError(-32602, 'x', 400)
  t.equal(upstreamError(own, 'u'), own)
  const ac = new AbortController()
  ac.abort(new Error('stop'))
  t.type(upstreamError(new Error('aborted'), 'u', ac.signal), Cancelled)
  t.same(toWire(new Error('boom')), { code: -32603, message: 'boom', status: 502 })
  t.same(toWire(new McpError(-32021, 'm', 400, { a: 1 }, { h: 'v' })), { code: -32021, message: 'm', status: 400, data: { a: 1 }, headers: { h: 'v' } })
})

t.test('an upstream closed while it connects reports failure and stays closed', async (t) => {
  const up = new Upstream(everythingStdio, { name: 'u', log: quiet }, { connected() {}, notified() {}, asked: async () => ({}) })
  const starting = up.start()
  await up.close()
  t.equal(await starting, false)
  t.equal(up.state, 'closed')
})

t.test('a question outside any call, or among several callers, is refused', async (t) => {
  const rounds = new Rounds('i', new MemoryRelay(), 60_000, quiet)
  const signal = new AbortController().signal
  await t.rejects(rounds.asked({ method: 'elicitation/create', params: {} }, signal), /outside a request/)
  t.same(await rounds.asked({ method: 'roots/list' }, signal), { roots: [] })
  const ctx = (id: string) => ({ principal: { ...ANONYMOUS, id }, signal, clientCapabilities: { elicitation: {} } }) as never
  void rounds.start(ctx('alice'), () => new Promise(() => undefined))
  void rounds.start(ctx('bob'), () => new Promise(() => undefined))
  await t.rejects(rounds.asked({ method: 'sampling/createMessage', params: {} }, signal), /cannot tell which caller/)
  t.same(rounds.callers(), [])
  await rounds.close()
})

t.test('an answer to a question already answered is ignored', async (t) => {
  const call = new UpstreamCall('i', { principal: ANONYMOUS } as never, 60_000, () => undefined)
  call.answer({ q9: { action: 'accept' } })
  t.equal(call.round, 0)
})

t.test('prompt arguments without a completer; entries the registry refuses are reported', async (t) => {
  const mcp = new McpServer({ name: 'm', version: '1' })
  const fw = { forward: async () => ({}), completer: () => undefined }
  register(mcp, 'prompts', { name: 'p', arguments: [{ name: 'a', required: true }] }, fw)
  t.same(mcp.prompts.get('p')!.completers.size, 0)
  t.throws(() => register(mcp, 'tools', { name: 'bad name', inputSchema: { type: 'object' } }, fw), /must match/)
})

t.test('the log before the app: JSON lines at LOG_LEVEL, then the app logger', async (t) => {
  const log = new LateLogger('warn')
  const written: string[] = []
  const write = process.stderr.write.bind(process.stderr)
  process.stderr.write = ((s: string) => ((written.push(s), true))) as never
  try {
    log.info({ a: 1 }, 'hidden')
    log.error({ a: 2 }, 'shown')
  } finally {
    process.stderr.write = write
  }
  t.equal(written.length, 1)
  t.match(JSON.parse(written[0]!), { level: 50, a: 2, msg: 'shown' })
  const got: unknown[] = []
  log.target = { ...quiet, debug: (o: unknown) => got.push(o) }
  log.debug({ b: 1 })
  t.same(got, [{ b: 1 }])
})

t.test('an upstream entry this library cannot serve is left out, the others served', async (t) => {
  // A minimal upstream on the SDK's low-level Server: one tool name this binding refuses.
  const script = `
    import { Server } from '@modelcontextprotocol/sdk/server/index.js'
    import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
    import { ListToolsRequestSchema, CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js'
    const s = new Server({ name: 'odd', version: '1' }, { capabilities: { tools: {} } })
    const tool = (name) => ({ name, inputSchema: { type: 'object' } })
    s.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [tool('has space'), tool('fine')] }))
    s.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: 'text', text: 'ok' }] }))
    await s.connect(new StdioServerTransport())`
  const warnings: unknown[] = []
  const { serveUpstream } = await import('./gateway-helper.js')
  const { gw } = await serveUpstream(t, { command: process.execPath, args: ['--input-type=module', '-e', script] }, {
    log: { ...quiet, warn: (o: unknown) => warnings.push(o) }
  })
  t.same([...gw.mcp.tools.keys()], ['fine'])
  t.match(warnings, [{ kind: 'tools', item: 'has space', reason: /must match/ }])
})
