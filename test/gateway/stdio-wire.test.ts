import { Socket } from 'node:net'
import t from 'tap'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { McpError } from '../../src/errors.js'
import { UpstreamAnswer } from '../../src/gateway/errors.js'
import { StdioChild } from '../../src/gateway/stdio.js'
import { Wire } from '../../src/gateway/wire.js'
import { Cancel } from '../../src/core/cancel.js'
import { handWritten } from '../helpers/gateway-hostile.js'

/** A child running `script` under node, with what it says kept: messages, errors, stderr lines, and its close. */
function child(script: string, options: { maxLineBytes?: number; validate?: (m: unknown) => JSONRPCMessage } = {}) {
  const heard = { messages: [] as unknown[], errors: [] as string[], stderr: [] as string[], closed: false }
  const c = new StdioChild({
    command: process.execPath,
    args: ['-e', script],
    env: {},
    validate:
      options.validate ??
      ((m) => {
        if (typeof (m as { jsonrpc?: unknown }).jsonrpc !== 'string') throw new Error('no jsonrpc')
        return m as JSONRPCMessage
      }),
    stderr: (line) => heard.stderr.push(line),
    ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes })
  })
  c.onmessage = (m) => heard.messages.push(m)
  c.onerror = (err) => heard.errors.push(err.message)
  let closed: () => void
  const done = new Promise<void>((resolve) => (closed = resolve))
  c.onclose = () => {
    heard.closed = true
    closed()
  }
  return { c, heard, done }
}

const until = async (check: () => boolean): Promise<void> => {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10))
}

t.test('lines: split across writes and characters, \\r\\n, blank, not JSON, not JSON-RPC', async (t) => {
  // 'é' is two bytes: the first write ends between them.
  const script = `
    const out = (s) => new Promise((r) => process.stdout.write(s, () => setTimeout(r, 50)))
    ;(async () => {
      const e = Buffer.from('{"jsonrpc":"2.0","method":"a","params":{"s":"é"}}\\n')
      const cut = e.indexOf(0xc3) + 1
      await out(e.subarray(0, cut)); await out(e.subarray(cut))
      await out('{"jsonrpc":"2.0","method":"b"}\\r\\n\\n   \\n{"jsonrpc":"2.0",')
      await out('"method":"b2"}\\n')
      await out('not json\\n{"no":"jsonrpc"}\\n{"jsonrpc":"2.0","method":"c"}\\n')
      console.error('said on stderr')
      process.stdin.resume()
    })()`
  const { c, heard } = child(script)
  await c.start()
  t.teardown(() => c.close())
  t.type(c.pid, 'number')
  await until(() => heard.messages.length === 4 && heard.stderr.length === 1)
  t.same(heard.messages, [
    { jsonrpc: '2.0', method: 'a', params: { s: 'é' } },
    { jsonrpc: '2.0', method: 'b' },
    { jsonrpc: '2.0', method: 'b2' },
    { jsonrpc: '2.0', method: 'c' }
  ])
  t.same(heard.errors, ['the upstream wrote a line that is not JSON: not json', 'the upstream wrote a message that is not JSON-RPC: {"no":"jsonrpc"}'])
  t.same(heard.stderr, ['said on stderr'])
})

t.test('a line past the limit ends the connection, and says why', async (t) => {
  const { c, heard, done } = child('process.stdout.write(\'{"jsonrpc":"2.0","method":"\' + \'x\'.repeat(4000)); process.stdin.resume()', { maxLineBytes: 1000 })
  await c.start()
  await done
  t.same(heard.errors, ['the upstream wrote a line longer than 1000 bytes'])
  t.same(heard.messages, [])
  await t.rejects(c.send({ jsonrpc: '2.0', method: 'x' }), { message: 'Not connected' }, 'nothing is sent on a closed child')
})

t.test('a command that is not there: start fails with its reason', async (t) => {
  const c = new StdioChild({ command: '/nonexistent/x', args: [], env: {}, validate: (m) => m as JSONRPCMessage, stderr: () => {} })
  const errors: string[] = []
  c.onerror = (err) => errors.push(err.message)
  await t.rejects(c.start(), { code: 'ENOENT' })
  t.match(errors, [/ENOENT/])
})

t.test('close: stdin ended, then SIGTERM, then SIGKILL for a child that ignores both', async (t) => {
  const { c, heard } = child('process.on(\'SIGTERM\', () => console.error(\'TERM ignored\')); process.stdin.resume(); setInterval(() => {}, 1000); console.error(\'up\')')
  await c.start()
  await until(() => heard.stderr.length === 1)
  await c.close()
  t.ok(heard.closed, 'closed once it exited')
  t.same(heard.stderr, ['up', 'TERM ignored'])
  await c.close()
  t.pass('a second close is nothing')
})

t.test("writes to a stdio child's stdin made in one turn of the event loop leave in one writev", async (t) => {
  // The child's stdin is a socket: what reaches the pipe, and in how many writes, is counted there.
  const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>
  const { _write, _writev } = proto
  const batches: number[] = []
  // Ours only (tap's own sockets write too): the lines this test sends.
  const ours = (chunk: unknown) => String(chunk).startsWith('{"jsonrpc":"2.0","method":"test-')
  proto._write = function (this: unknown, ...args: unknown[]) {
    if (ours(args[0])) batches.push(1)
    return _write.apply(this, args)
  }
  proto._writev = function (this: unknown, ...args: unknown[]) {
    const chunks = args[0] as { chunk: unknown }[]
    if (ours(chunks[0]!.chunk)) batches.push(chunks.length)
    return _writev.apply(this, args)
  }
  t.teardown(() => Object.assign(proto, { _write, _writev }))
  const { c } = child('process.stdin.resume()')
  await c.start()
  t.teardown(() => c.close())
  let inFlight = 3
  c.busy = () => inFlight > 1
  for (const method of ['test-a', 'test-b', 'test-c']) void c.send({ jsonrpc: '2.0', method })
  t.same(batches, [], 'held until the turn ends')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(batches, [3], 'then written at once')
  void c.send({ jsonrpc: '2.0', method: 'test-d' })
  await new Promise((resolve) => setImmediate(resolve))
  t.same(batches, [3, 1], 'and the next turn on its own')
  inFlight = 1
  void c.send({ jsonrpc: '2.0', method: 'test-e' })
  t.same(batches, [3, 1, 1], 'alone in flight: written at once')
})

/** A server answering each method its own way (the framing is handWritten's), and saying which cancellations it heard. */
const answering = handWritten(
  'answering',
  [],
  `
      const id = m.id
      switch (m.method) {
        case 'notifications/cancelled': cancelled.push(m.params); break
        case 'ok': write({ jsonrpc: '2.0', id, result: { echo: m.params } }); break
        case 'refused': write({ jsonrpc: '2.0', id, error: { code: -32000, message: 'quota spent', data: { left: 0 } } }); break
        case 'bare': write({ jsonrpc: '2.0', id }); break
        case 'scalar': write({ jsonrpc: '2.0', id, result: 5 }); break
        case 'odd-error': write({ jsonrpc: '2.0', id, error: { code: 'x', message: 'm' } }); break
        case 'string-id': write({ jsonrpc: '2.0', id: String(id), result: {} }); break
        case 'notify':
          write({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } })
          write({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } })
          write({ jsonrpc: '2.0', id, result: {} })
          break
        case 'cancelled': write({ jsonrpc: '2.0', id, result: { cancelled } }); break
        case 'exit': process.exit(0)
      }`,
  'const cancelled = []'
)

t.test('the wire: results, the upstream error, malformed answers, cancellation, and a close with requests in flight', async (t) => {
  const { c, heard } = child(answering)
  await c.start()
  t.teardown(() => c.close())
  const wire = new Wire(c, 'up')
  t.same(await wire.request('ok', { a: 1 }), { echo: { a: 1 } })
  const refused = await wire.request('refused', {}).catch((err: unknown) => err)
  t.type(refused, UpstreamAnswer)
  t.same([(refused as UpstreamAnswer).code, (refused as UpstreamAnswer).message, (refused as UpstreamAnswer).data], [-32000, 'quota spent', { left: 0 }])
  for (const [method, what] of [
    ['bare', 'neither a result nor an error'],
    ['scalar', 'a result that is not an object'],
    ['odd-error', 'a malformed error']
  ]) {
    const err = await wire.request(method!, {}).catch((e: unknown) => e)
    t.type(err, McpError)
    t.same([(err as McpError).status, (err as McpError).message], [502, `The upstream server up answered ${method} with ${what}`])
  }
  t.same(await wire.request('string-id', {}), {}, 'an id answered as a string')
  t.same(await wire.request('notify', {}), {})
  t.same(
    heard.messages,
    [
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } },
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }
    ],
    'what is not an answer of ours goes on'
  )

  const ac = new Cancel()
  const waiting = wire.request('never', {}, ac)
  t.equal(wire.size, 1)
  ac.abort(new Error('the caller left'))
  await t.rejects(waiting, { message: 'Error: the caller left' })
  t.equal(wire.size, 0)
  t.match(await wire.request('cancelled', {}), { cancelled: [{ requestId: Number, reason: 'Error: the caller left' }] }, 'the upstream is told')
  await t.rejects(wire.request('ok', {}, ac), { message: 'Error: the caller left' }, 'already aborted: not sent')

  const lost = wire.request('never', {})
  const exiting = wire.request('exit', {}).catch((err: unknown) => err)
  await t.rejects(lost, { message: 'The upstream server up closed the connection during the request' })
  t.match(await exiting, { message: /closed the connection/ })
  await t.rejects(wire.request('ok', {}), { message: 'Not connected' })
  t.equal(wire.size, 0)
})

t.test("an upstream's unreadable lines are dropped and logged: the first of a connection at warn, the rest at debug", async (t) => {
  const { Upstream } = await import('../../src/gateway/upstream.js')
  const said: [string, string, unknown][] = []
  const at = (level: string) => (o: { reason?: unknown }, msg: string) => void said.push([level, msg, o.reason])
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
  const script = handWritten('noisy', ['noise'], 'if (m.method === \'tools/call\') { process.stdout.write(\'starting\\nstill starting\\n\'); write({ jsonrpc: \'2.0\', id: m.id, result: text(\'done\') }) }')
  const up = new Upstream({ command: process.execPath, args: ['-e', script] }, { name: 'noisy', log }, { connected() {}, notified() {}, asked: async () => ({}) })
  t.teardown(() => up.close())
  t.ok(await up.start())
  t.same(await up.request('tools/call', { name: 'noise', arguments: {} }), { content: [{ type: 'text', text: 'done' }] })
  t.same(
    said.filter(([, msg]) => msg === 'upstream message dropped'),
    [
      ['warn', 'upstream message dropped', 'the upstream wrote a line that is not JSON: starting'],
      ['debug', 'upstream message dropped', 'the upstream wrote a line that is not JSON: still starting']
    ]
  )
})

t.test('closed while a connection to a URL is failing: it stays closed, with no restart', async (t) => {
  const { createServer } = await import('node:net')
  const { Upstream } = await import('../../src/gateway/upstream.js')
  // Accepts and never answers: the connect waits for its timeout.
  const sockets: Socket[] = []
  const silent = createServer((socket) => void sockets.push(socket))
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    silent.close()
  })
  const said: string[] = []
  const at = () => (_o: unknown, msg: string) => void said.push(msg)
  const log = { debug: at(), info: at(), warn: at(), error: at() }
  const port = (silent.address() as { port: number }).port
  const up = new Upstream({ url: `http://127.0.0.1:${port}/mcp` }, { name: 'silent', log, connectTimeoutMs: 2000, restartMinMs: 50 }, { connected() {}, notified() {}, asked: async () => ({}) })
  const starting = up.start()
  // Closed once the connect is under way (the upstream's initialize reached the silent server).
  await new Promise((resolve) => silent.once('connection', resolve))
  t.equal(up.state, 'starting')
  await up.close()
  t.equal(await starting, false, 'the start failed')
  t.equal(up.state, 'closed', 'and the upstream stays closed, not down')
  t.notOk(said.includes('upstream down'), 'no restart is planned')
})
