import t from 'tap'
import { McpServer } from '../../src/core/mcp-server.js'
import { UpstreamCall } from '../../src/gateway/call.js'
import { register, relayLog } from '../../src/gateway/catalogue.js'
import { Rounds, toWire } from '../../src/gateway/rounds.js'
import { MemoryRelay } from '../../src/gateway/relay.js'
import { LateLogger } from '../../src/gateway/serve.js'
import { Cancelled, UpstreamAnswer, upstreamError } from '../../src/gateway/errors.js'
import { Upstream } from '../../src/gateway/upstream.js'
import { McpError } from '../../src/errors.js'
import { ANONYMOUS, type Logger, type Principal } from '../../src/core/request-context.js'
import { CallContext } from '../../src/core/call-context.js'
import { Cancel } from '../../src/core/cancel.js'
import { LATEST_VERSION } from '../../src/protocol.js'
import { createServer } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { MAX_ITEMS } from '../../src/gateway/lists.js'
import { caps, everythingStdio } from '../helpers/gateway-helper.js'
import { oddUpstream, oddUpstreamNamed } from '../helpers/gateway-odd.js'

const quiet = { debug() {}, info() {}, warn() {}, error() {} }

/** A caller's context as the faces build it: `principal` and `clientCapabilities`, no transport to watch. */
const callerOf = (principal: Principal, clientCapabilities?: Record<string, unknown>, log: Logger = quiet) =>
  new CallContext(
    { requestId: 'r', protocolVersion: LATEST_VERSION, era: 'modern', meta: undefined, clientCapabilities, principal, log, deadline: Infinity },
    { progressToken: () => undefined, logFloor: () => undefined, send: () => undefined }
  )

const pick = (err: Error) => [(err as McpError).code, (err as McpError).status, err.message]

t.test('upstream errors as the client sees them', async (t) => {
  const bad = upstreamError(new UpstreamAnswer(-32602, 'no such thing', { x: 1 }), 'u')
  t.same([bad.constructor, (bad as McpError).code, (bad as McpError).status, bad.message, (bad as McpError).data], [McpError, -32602, 400, 'no such thing', { x: 1 }])
  // A code the JSON-RPC range leaves to servers keeps its code and words (it was once taken for the SDK's "connection closed").
  t.same(pick(upstreamError(new UpstreamAnswer(-32000, 'quota spent', undefined), 'u')), [-32000, 502, 'quota spent'])
  t.same(pick(upstreamError(new UpstreamAnswer(-31999, 'odd', undefined), 'u')), [-31999, 502, 'odd'], 'an unknown code: 502')
  t.same(pick(upstreamError(new UpstreamAnswer(-32603, 'it broke', undefined), 'u')), [-32603, 502, 'The upstream server u failed: it broke'])
  t.same(pick(upstreamError(new UpstreamAnswer(1.5 as number, 'half', undefined), 'u')), [-32603, 502, 'The upstream server u failed: half'], 'a code that is not an integer')
  t.same(pick(upstreamError(new Error('Not connected'), 'u')), [-32603, 502, 'The upstream server u failed: Not connected'])
  const own = new McpError(-32602, 'x', 400)
  t.equal(upstreamError(own, 'u'), own)
  const ac = new AbortController()
  ac.abort(new Error('stop'))
  t.type(upstreamError(new Error('aborted'), 'u', ac.signal), Cancelled)
  t.same(toWire(new Error('boom')), { name: 'MCP_ERR_UPSTREAM_FAILED', code: -32603, message: 'boom', status: 502 })
  t.same(toWire(new McpError(-32021, 'm', 400, { a: 1 }, { h: 'v' })), { name: 'MCP_ERR_APPLICATION', code: -32021, message: 'm', status: 400, data: { a: 1 }, headers: { h: 'v' } })
})

t.test('an upstream closed while it connects reports failure and stays closed', async (t) => {
  const up = new Upstream(everythingStdio, { name: 'u', log: quiet }, { connected() {}, notified() {}, asked: async () => ({}) })
  const starting = up.start()
  await up.close()
  t.equal(await starting, false)
  t.equal(up.state, 'closed')
})

t.test('an upstream stopped while its first connection hangs stays closed when that attempt fails', async (t) => {
  let requested: () => void
  const asked = new Promise<void>((resolve) => (requested = resolve))
  // Accepts and never answers: the attempt ends at connectTimeoutMs.
  const server = createServer(() => requested())
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
  const up = new Upstream({ url }, { name: 'u', log: quiet, connectTimeoutMs: 300, restartMinMs: 10 }, { connected() {}, notified() {}, asked: async () => ({}) })
  const starting = up.start()
  await asked
  await up.close()
  t.equal(await starting, false)
  t.equal(up.state, 'closed', 'no restart once stopped')
  t.match(up.lastError, /timed out/i)
})

t.test('a question outside any call, or among several callers, is refused', async (t) => {
  const rounds = new Rounds('i', new MemoryRelay(), 60_000, quiet, 16)
  const signal = new AbortController().signal
  await t.rejects(rounds.asked({ method: 'elicitation/create', params: {} }, signal), /outside a request/)
  await t.rejects(rounds.asked({ method: 'roots/list' }, signal), { name: 'MCP_ERR_UPSTREAM_REQUEST_REFUSED', message: /roots\/list outside a request/ }, 'roots are a client\'s: none to give outside a call')
  const ctx = (id: string) => callerOf({ ...ANONYMOUS, id }, { elicitation: {} })
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

t.test("an upstream tool's stray top-level `ui` is not taken for our view link; its _meta.ui is passed as it is", async (t) => {
  const mcp = new McpServer({ name: 'm', version: '1' })
  const fw = { forward: async () => ({}), completer: () => undefined }
  const _meta = { ui: { resourceUri: 'ui://not/listed', visibility: ['app'] } }
  register(mcp, 'tools', { name: 'app', inputSchema: { type: 'object' }, ui: { resourceUri: 'ui://not/listed' }, _meta }, fw)
  t.same(mcp.tools.get('app')!.definition._meta, _meta)
  t.notOk('ui' in mcp.tools.get('app')!.definition)
})

t.test("an upstream's list entries set wire fields only, never our registration options", async (t) => {
  const mcp = new McpServer({ name: 'm', version: '1' })
  const fw = { forward: async () => ({}), completer: () => undefined }
  const ours = { task: 'required', taskTtlMs: 1, pollIntervalMs: 1, scopes: ['admin'], checkSchemas: true, state: { type: 'string' }, resolvers: { x: 'y' } }
  register(mcp, 'tools', { name: 't', title: 'T', description: 'd', annotations: { readOnlyHint: true }, icons: [{ src: 'https://x.test/i.png' }], _meta: { k: 1 }, inputSchema: { type: 'object' }, ...ours }, fw)
  const tool = mcp.tools.get('t')!
  t.same(tool.task, { mode: 'forbidden', ttlMs: 3_600_000, pollIntervalMs: 1000 }, 'not task-only: the upstream says how it runs a call, not how we do')
  t.same(tool.scopes, [], 'no scopes of its choosing')
  t.same([tool.mrtr.plan, tool.mrtr.validateState], [undefined, undefined], 'no questions or state of its own')
  t.same(tool.definition, { name: 't', title: 'T', description: 'd', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true }, icons: [{ src: 'https://x.test/i.png' }], _meta: { k: 1 } })
  register(mcp, 'prompts', { name: 'p', title: 'P', _meta: { k: 2 }, arguments: [{ name: 'a', description: 'an a', complete: { not: 'a function' } }], ...ours }, fw)
  const prompt = mcp.prompts.get('p')!
  t.same(prompt.definition, { name: 'p', title: 'P', arguments: [{ name: 'a', description: 'an a' }], _meta: { k: 2 } })
  t.same([prompt.completers.size, prompt.mrtr.plan, prompt.mrtr.validateState], [0, undefined, undefined])
  register(mcp, 'resources', { uri: 'x:r', name: 'r', mimeType: 'text/plain', size: 3, ui: { csp: {} }, ...ours }, fw)
  t.same(mcp.resources.get('x:r')!.definition, { uri: 'x:r', name: 'r', mimeType: 'text/plain', size: 3 })
  register(mcp, 'templates', { uriTemplate: 'x:{id}', name: 'x', complete: { id: 'nope' }, ...ours }, fw)
  t.same(mcp.templates.get('x:{id}')!.definition, { uriTemplate: 'x:{id}', name: 'x' })
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

t.test('an odd upstream: entries left out with the reason, a list that pages without end, no completions', async (t) => {
  const warnings: unknown[] = []
  const { serveUpstream } = await import('../helpers/gateway-helper.js')
  const { gw } = await serveUpstream(t, oddUpstream, { log: { ...quiet, warn: (o: unknown) => warnings.push(o) } })
  t.same([...gw.mcp.tools.keys()], ['fine', 'subs', 'exit', 'ask', 'wait'])
  t.equal(gw.mcp.resources.size, MAX_ITEMS, 'every page fetched, up to the bound')
  t.equal(gw.mcp.prompts.size, 0, 'an answer without its list is an empty list')
  t.same([...gw.mcp.templates.values()].map((x) => x.definition.uriTemplate), ['odd://t/{id}'])
  t.same(gw.mcp.templates.get('odd://t/{id}')!.completers.size, 0, 'no completions upstream: no completer')
  t.match(warnings, [
    { kind: 'tools', item: 'has space', reason: /must match/ },
    { kind: 'templates', item: 'odd://q{?q}' }
  ])
  // A URI of the template left out is not served here, but the upstream serves it: the read goes there.
  const { call } = await import('../helpers/helper.js')
  const app = (await import('../../src/server.js')).buildServer({ logger: false, mcp: gw.mcp })
  t.teardown(async () => (await app).close())
  const read = await call(await app, { url: `/resources/${encodeURIComponent('odd://q?q=1')}` })
  t.same([read.status, read.body.contents], [200, [{ uri: 'odd://q?q=1', text: 'odd' }]], 'an unlisted URI, read by the upstream')
})

t.test('a question the upstream withdraws is no longer asked', async (t) => {
  const call = new UpstreamCall('i', { principal: ANONYMOUS } as never, 60_000, () => undefined)
  const withdrawn = new AbortController()
  const asked = call.ask({ method: 'elicitation/create', params: {} }, withdrawn.signal)
  withdrawn.abort(new Error('upstream cancelled it'))
  await t.rejects(asked, /upstream cancelled it/)
  call.run(async () => ({ content: [] }))
  t.match(await call.next(undefined, {}), { kind: 'done' }, 'nothing left to ask: the result')
})

t.test('roots/list during a call: asked when the caller declared roots, else -32601 as such a client answers', async (t) => {
  const rounds = new Rounds('i', new MemoryRelay(), 60_000, quiet, 16)
  const signal = new AbortController().signal
  const ctx = (clientCapabilities?: Record<string, unknown>) => callerOf(ANONYMOUS, clientCapabilities)
  const forever = (abort: Cancel) => new Promise<never>((_resolve, reject) => abort.on(reject))
  const plain = rounds.start(ctx(undefined), forever)
  await t.rejects(rounds.asked({ method: 'roots/list' }, signal), { code: -32601, message: /offers no roots/ })
  await rounds.close()
  await t.rejects(plain, /shutting down/)
  const withRoots = new Rounds('j', new MemoryRelay(), 60_000, quiet, 16)
  const first = withRoots.start(ctx({ roots: {} }), forever)
  const answer = withRoots.asked({ method: 'roots/list' }, signal)
  const round = await first
  t.match(round, { kind: 'ask', requests: { q0: { method: 'roots/list' } } })
  const resumed = withRoots.resume((round as unknown as { ref: never }).ref, { q0: { roots: [{ uri: 'file:///x' }] } }, ctx({ roots: {} }))
  t.same(await answer, { roots: [{ uri: 'file:///x' }] })
  await withRoots.close()
  await t.rejects(resumed, /shutting down/)
})

t.test('a round the relay cannot carry (its connection failed) is an invalid requestState', async (t) => {
  const warned: unknown[] = []
  const relay = { serve: async () => async () => undefined, send: async () => Promise.reject(new Error('connection lost')) }
  const rounds = new Rounds('i', relay, 60_000, { ...quiet, warn: (o: unknown) => warned.push(o) }, 16)
  const ctx = callerOf(ANONYMOUS, undefined, { ...quiet, warn: (o: unknown) => warned.push(o) })
  await t.rejects(rounds.resume({ i: 'elsewhere', r: 'x', n: 1 }, {}, ctx), { message: 'Invalid or expired requestState', status: 400 })
  t.match(warned, [{ instance: 'elsewhere' }])
})

t.test('an HTTP upstream closed after it answered initialize, before the connection was taken up', async (t) => {
  let release: (() => void) | undefined
  const held = new Promise<void>((resolve) => (release = resolve))
  let initialized = () => {}
  const asked = new Promise<void>((resolve) => (initialized = resolve))
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d: Buffer) => (body += String(d)))
    req.on('end', async () => {
      const msg = body === '' ? undefined : JSON.parse(body)
      if (msg?.method !== 'initialize') return res.writeHead(req.method === 'POST' ? 202 : 405).end()
      initialized()
      await held
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'slow', version: '1' } } }))
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const { port } = server.address() as AddressInfo
  const up = new Upstream({ url: `http://127.0.0.1:${port}/mcp` }, { name: 'u', log: quiet }, { connected() {}, notified() {}, asked: async () => ({}) })
  const starting = up.start()
  await asked
  const closing = up.close()
  release!()
  t.equal(await starting, false)
  await closing
  t.equal(up.state, 'closed')
  t.equal(up.client, undefined)
})

t.test('a restarted upstream is subscribed again to what clients are subscribed to', async (t) => {
  const { serveUpstream, until } = await import('../helpers/gateway-helper.js')
  const { call, json, legacyJson } = await import('../helpers/helper.js')
  const { app, gw } = await serveUpstream(t, oddUpstream, { restartMinMs: 50 })
  const uri = 'odd://r/0-7'
  t.equal((await app.inject({ method: 'POST', url: '/resources/subscribe', ...legacyJson({ uri }) })).statusCode, 202)
  t.equal((await call(app, { method: 'POST', url: '/tools/subs/calls', ...json({ arguments: {} }) })).body.content[0].text, uri)
  const pid = gw.upstream.pid
  await call(app, { method: 'POST', url: '/tools/exit/calls', ...json({ arguments: {} }) })
  await until(() => gw.upstream.state === 'up' && gw.upstream.pid !== pid, 'the restart')
  await until(async () => (await call(app, { method: 'POST', url: '/tools/subs/calls', ...json({ arguments: {} }) })).body.content?.[0].text === uri, 'subscribed again')
})

t.test('one principal may hold maxOpenRounds open rounds; the next is 429 with the time the first expires', async (t) => {
  const { serveUpstream } = await import('../helpers/gateway-helper.js')
  const { call, json } = await import('../helpers/helper.js')
  const { app } = await serveUpstream(t, oddUpstream, { maxOpenRounds: 2, server: { stateTtlMs: 60_000 } })
  const ask = () => call(app, { method: 'POST', url: '/tools/ask/calls', ...json({ arguments: {}, _meta: caps({ elicitation: {} }) }) })
  const first = await ask()
  t.equal(first.body.resultType, 'input_required')
  t.equal((await ask()).body.resultType, 'input_required')
  const third = await ask()
  t.same([third.status, third.body.code], [429, -32600])
  t.match(third.body.message, /at most 2/)
  const after = Number(third.headers['retry-after'])
  t.ok(after > 50 && after <= 60, `Retry-After ${after}: when the first round expires`)
  // Answering a round frees its place.
  const key = Object.keys(first.body.inputRequests)[0]!
  const done = await call(app, {
    method: 'POST',
    url: '/tools/ask/calls',
    ...json({ arguments: {}, _meta: caps({ elicitation: {} }), requestState: first.body.requestState, inputResponses: { [key]: { action: 'accept', content: { name: 'Bo' } } } })
  })
  t.equal(done.body.content[0].text, 'Hello Bo')
  t.equal((await ask()).body.resultType, 'input_required')
})

t.test('a retry that answers nothing is asked the same question again, in a new round', async (t) => {
  const { serveUpstream } = await import('../helpers/gateway-helper.js')
  const { call, json } = await import('../helpers/helper.js')
  const { app } = await serveUpstream(t, oddUpstream)
  const body = { arguments: {}, _meta: caps({ elicitation: {} }) }
  const first = await call(app, { method: 'POST', url: '/tools/ask/calls', ...json(body) })
  const again = await call(app, { method: 'POST', url: '/tools/ask/calls', ...json({ ...body, requestState: first.body.requestState }) })
  t.equal(again.body.resultType, 'input_required')
  t.same(again.body.inputRequests, first.body.inputRequests)
  t.not(again.body.requestState, first.body.requestState)
})

t.test("an upstream log message reaches the caller with its logger's name when it has one", async (t) => {
  const got: unknown[][] = []
  const ctx = { sendLog: async (...args: unknown[]) => void got.push(args) } as never
  relayLog(ctx, { level: 'info', data: 'plain' })
  relayLog(ctx, { level: 'error', data: { n: 1 }, logger: 'db' })
  t.same(got, [
    ['info', 'plain', undefined],
    ['error', { n: 1 }, 'db']
  ])
})

t.test('a round sent with a signal already aborted: the holder has it, the sender stops at once', async (t) => {
  const relay = new MemoryRelay()
  const held: unknown[] = []
  await relay.serve('i', (round) => {
    held.push(round)
    return new Promise(() => undefined)
  })
  const ac = new AbortController()
  ac.abort(new Error('the client went away'))
  await t.rejects(relay.send('i', { round: 1 } as never, ac.signal), /the client went away/)
  t.same(held, [{ round: 1 }])
})

t.test('a stdio upstream given by the library without args: the command runs alone', async (t) => {
  // An executable script in the project's tree (so that it finds the SDK in node_modules).
  const { chmodSync, writeFileSync } = await import('node:fs')
  const { join } = await import('node:path')
  const file = join(t.testdir(), 'odd-server.mjs')
  writeFileSync(file, `#!${process.execPath}\n${oddUpstreamNamed('odd').args[2]}`)
  chmodSync(file, 0o755)
  const up = new Upstream({ command: file }, { name: 'u', log: quiet }, { connected() {}, notified() {}, asked: async () => ({}) })
  t.teardown(() => up.close())
  t.equal(await up.start(), true)
  t.equal(up.client!.getServerVersion()!.name, 'odd')
})

t.test("the upstream's subscription: kept while other subscribers remain, dropped with the last; none asked of an upstream without subscriptions", async (t) => {
  const { serveUpstream, FILESYSTEM } = await import('../helpers/gateway-helper.js')
  const { call, json } = await import('../helpers/helper.js')
  const { app, gw } = await serveUpstream(t, oddUpstream)
  const subs = async () => (await call(app, { method: 'POST', url: '/tools/subs/calls', ...json({ arguments: {} }) })).body.content[0].text
  const uri = 'odd://r/0-1'
  await gw.subscribeUpstream(uri)
  t.equal(await subs(), uri)
  await gw.unsubscribeUpstream(uri, 1)
  t.equal(await subs(), uri, 'one subscriber remains: the upstream stays subscribed')
  await gw.unsubscribeUpstream(uri, 0)
  t.equal(await subs(), '', 'the last one gone: unsubscribed')
  // The filesystem server offers no resource subscriptions: asking it would be an error.
  const fs = await serveUpstream(t, { command: process.execPath, args: [FILESYSTEM, t.testdir()] })
  await t.resolves(fs.gw.subscribeUpstream('file:///nothing'))
})

t.test('a stdio upstream that stops answering pings is taken for dead, closed and started again', async (t) => {
  // Stopped (SIGSTOP), its pipes stay open: only the ping can tell. It is let go on (SIGCONT) once
  // the warning is logged, so that closing it (SIGTERM) ends it.
  const { until } = await import('../helpers/gateway-helper.js')
  const stopped = { pid: 0 }
  const resume = () => {
    try {
      process.kill(stopped.pid, 'SIGCONT')
    } catch {} // gone already
  }
  const warned: string[] = []
  const log = {
    ...quiet,
    warn(_fields: unknown, message: string) {
      warned.push(message)
      if (message === 'upstream stopped answering') resume()
    }
  }
  const up = new Upstream(oddUpstream, { name: 'u', log, pingIntervalMs: 100, pingTimeoutMs: 2000, restartMinMs: 50 }, { connected() {}, notified() {}, asked: async () => ({}) })
  t.teardown(async () => {
    resume()
    await up.close()
  })
  t.equal(await up.start(), true)
  stopped.pid = up.pid!
  process.kill(stopped.pid, 'SIGSTOP')
  await until(() => up.state === 'up' && up.pid !== undefined && up.pid !== stopped.pid, 'a new child')
  t.ok(warned.includes('upstream stopped answering'))
})

t.test('a stdio command is spawned through setpriv --pdeathsig when it can be found, else as given', async (t) => {
  const { boundToUs } = await import('../../src/gateway/child.js')
  const { dirname, basename } = await import('node:path')
  const node = process.execPath
  const bound = (command: string) => ({ command: '/usr/bin/setpriv', args: ['--pdeathsig', 'TERM', '--', command, '-v'] })
  t.same(boundToUs(node, ['-v'], { PATH: '' }, undefined), bound(node), 'a path that runs')
  t.same(boundToUs(basename(node), ['-v'], { PATH: `/nonexistent:${dirname(node)}` }, undefined), bound(basename(node)), 'a name found on PATH')
  t.same(boundToUs(`./${basename(node)}`, ['-v'], {}, dirname(node)), bound(`./${basename(node)}`), 'a path relative to cwd')
  t.same(boundToUs(basename(node), ['-v'], {}, undefined), { command: basename(node), args: ['-v'] }, 'no PATH: as given, for Node to say ENOENT')
  t.same(boundToUs('/nonexistent/x', [], { PATH: '/usr/bin' }, undefined), { command: '/nonexistent/x', args: [] }, 'not there: as given')
})

t.test("a deadline follows its caller's signal, and says when it passed by itself", async (t) => {
  const { Deadline } = await import('../../src/gateway/deadline.js')
  const early = new AbortController()
  early.abort(new Error('gone before'))
  const before = new Deadline(60_000, early.signal)
  t.same([before.signal.aborted, (before.signal.reason as Error).message, before.passed], [true, 'gone before', false], 'a caller gone already')
  const caller = new AbortController()
  const later = new Deadline(60_000, caller.signal)
  later.start()
  caller.abort(new Error('gone'))
  t.same([later.signal.aborted, (later.signal.reason as Error).message, later.passed], [true, 'gone', false], "the caller's abort, with its reason")
  later.end()
  const own = new Deadline(1, new AbortController().signal)
  own.start()
  await new Promise((resolve) => own.signal.addEventListener('abort', resolve, { once: true }))
  t.equal(own.passed, true, 'its own time')
  const ended = new AbortController()
  const done = new Deadline(60_000, ended.signal)
  done.end()
  ended.abort()
  t.equal(done.signal.aborted, false, 'ended: the caller is no longer followed')
  // A call's own Cancel: the deadline aborts it when it passes, and is not fooled by the caller's abort.
  const call = new Cancel()
  const timed = new Deadline(1, call)
  t.equal(timed.cancel, call, 'no Cancel of its own')
  timed.start()
  await new Promise((resolve) => call.on(resolve))
  t.same([timed.passed, call.reason!.message], [true, 'nothing for 1 ms'], 'passed: the call aborted with its reason')
  t.same([timed.signal.aborted, (timed.signal.reason as Error).message], [true, 'nothing for 1 ms'], 'a signal asked for afterwards is aborted already')
  const cancelled = new Cancel()
  const first = new Deadline(1, cancelled)
  const fetched = first.signal
  first.start()
  cancelled.abort(new Error('cancelled'))
  cancelled.abort(new Error('again'))
  // A timer of the same length set after it runs after it (Node keeps them in order).
  await new Promise((resolve) => setTimeout(resolve, 1))
  t.same([first.passed, cancelled.reason!.message, (fetched.reason as Error).message], [false, 'cancelled', 'cancelled'], 'cancelled before it passed: not passed; its signal follows, the first reason kept')
})

t.test('Cancel: listeners once and in order, one removed is not called, one added after the abort at once', async (t) => {
  const cancel = new Cancel()
  const heard: string[] = []
  const a = (r: Error) => heard.push(`a ${r.message}`)
  const b = (r: Error) => heard.push(`b ${r.message}`)
  cancel.on(a)
  cancel.on(b)
  cancel.off(a)
  cancel.off(a)
  t.equal(cancel.aborted, false)
  cancel.abort(new Error('x'))
  cancel.abort(new Error('y'))
  cancel.on(a)
  t.same([cancel.aborted, heard], [true, ['b x', 'a x']])
})

t.test("a call's context: onCancel hears the cancellation without making a signal, watches the transport once", async (t) => {
  let watched = 0
  let close: ((reason: Error) => void) | undefined
  const ctx = callerOf(ANONYMOUS)
  const watching = new CallContext(
    {
      ...ctx,
      watch: (abort) => {
        watched++
        close = abort
      }
    },
    ctx.outlet
  )
  const heard: string[] = []
  const a = (r: Error) => heard.push(`a ${r.message}`)
  const b = (r: Error) => heard.push(`b ${r.message}`)
  t.equal(watched, 0, 'nobody listens: the transport is not watched')
  watching.onCancel(a)
  watching.onCancel(b)
  watching.offCancel(b)
  watching.offCancel(b)
  const signal = watching.signal
  t.same([watched, watching.cancelled], [1, false], 'watched once, for the listener and the signal both')
  close!(new Error('The client closed the connection'))
  watching.abort(new Error('later'))
  t.same([heard, watching.cancelled, (signal.reason as Error).message], [['a The client closed the connection'], true, 'The client closed the connection'])
  watching.onCancel(b)
  t.same(heard, ['a The client closed the connection', 'b The client closed the connection'], 'cancelled already: at once')
  const early = callerOf(ANONYMOUS)
  early.abort(new Error('cancelled first'))
  t.same([early.cancelled, early.signal.aborted, (early.signal.reason as Error).message], [true, true, 'cancelled first'], 'a signal made after the abort is aborted')
})

t.test('a gateway that replaces another (a reload changed its entry) takes over its upstream subscriptions, holders and all', async (t) => {
  const { serveUpstream } = await import('../helpers/gateway-helper.js')
  const { call, json } = await import('../helpers/helper.js')
  const before = await serveUpstream(t, oddUpstream)
  const after = await serveUpstream(t, oddUpstream)
  const subs = async () => (await call(after.app, { method: 'POST', url: '/tools/subs/calls', ...json({ arguments: {} }) })).body.content[0].text
  await before.gw.subscribeUpstream('odd://r/0-1')
  await before.gw.subscribeUpstream('odd://r/0-2', 'virtual')
  await before.gw.subscribeUpstream('odd://r/0-3')
  // One the new upstream refuses: the others are taken all the same.
  const request = after.gw.upstream.request.bind(after.gw.upstream)
  after.gw.upstream.request = async (method, params, options) => {
    if (params.uri === 'odd://r/0-1') throw new Error('refused')
    return request(method, params, options)
  }
  t.equal(await subs(), '')
  await after.gw.adopt(before.gw)
  t.equal(await subs(), 'odd://r/0-2,odd://r/0-3')
  await after.gw.unsubscribeUpstream('odd://r/0-2', 0, 'virtual')
  t.equal(await subs(), 'odd://r/0-3', "the virtual server's hold came along: its last subscriber gone, unsubscribed")
})

t.test('an ended call holds its request no more (a Map may keep it in an old table until a full collection)', async (t) => {
  const done = new UpstreamCall('i', callerOf(ANONYMOUS), 60_000, () => undefined)
  t.equal(done.principal, ANONYMOUS.id)
  done.run(async () => ({ content: [] }))
  t.match(await done.next(undefined, {}), { kind: 'done' })
  t.equal(done.ctx, undefined, 'settled: its context let go')
  const cancelled = new UpstreamCall('i', callerOf(ANONYMOUS), 60_000, () => undefined)
  cancelled.run((abort) => new Promise((_resolve, reject) => abort.on(reject)))
  cancelled.cancel('stop')
  t.equal(cancelled.ctx, undefined, 'cancelled: likewise')
  t.equal(cancelled.principal, ANONYMOUS.id, 'its principal stays')
})

t.test('Chain: items in the order they came, any one taken out, a stranger ignored', async (t) => {
  const { Chain } = await import('../../src/gateway/chain.js')
  type Item = { name: string; before: Item | undefined; after: Item | undefined }
  const item = (name: string): Item => ({ name, before: undefined, after: undefined })
  const chain = new Chain<Item>()
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(item) as [Item, Item, Item, Item]
  const names = () => [...chain].map((i) => i.name)
  for (const i of [a, b, c, d]) chain.add(i)
  t.same(names(), ['a', 'b', 'c', 'd'])
  chain.delete(b)
  t.same([names(), b.before, b.after], [['a', 'c', 'd'], undefined, undefined], 'from the middle: it lets go of its neighbours')
  chain.delete(b)
  chain.delete(item('stranger'))
  t.same(names(), ['a', 'c', 'd'], 'one not in it: nothing')
  chain.delete(a)
  chain.delete(d)
  t.same(names(), ['c'], 'the first and the last')
  chain.add(a)
  chain.delete(c)
  chain.delete(a)
  t.same(names(), [], 'empty')
  chain.add(b)
  t.same(names(), ['b'], 'and again')
})
