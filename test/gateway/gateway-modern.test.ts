import t, { type Test } from 'tap'
import type { AddressInfo } from 'node:net'
import { Type } from '@sinclair/typebox'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { headerText } from '../../src/gateway/modern.js'
import { watchCallers } from '../../src/gateway/connection.js'
import { buildServer } from '../../src/server.js'
import { call, json } from '../helpers/helper.js'
import { caps, drain, everythingHttp, serveUpstream, until } from '../helpers/gateway-helper.js'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

// One key ring for the gateways: a round sealed by one opens on the other.
const ring = `k1:${Buffer.alloc(32, 9).toString('base64url')}`
const ASKS = caps({ elicitation: {} })
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content })

/**
 * This project's demo as the upstream, on a loopback port: it speaks 2026-07-28 at /mcp and asks
 * with input_required. `seen` keeps what reached its /mcp (method, Mcp-Name, Mcp-Param-Region).
 */
async function upstream(t: Test) {
  const mcp = createDemoServer({ taskStepMs: 5 })
  mcp.tool({ name: 'regional', description: 'Mirrors its region into a header.', input: Type.Object({ region: Type.String({ 'x-mcp-header': 'Region' }) }) }, ({ region }) => `in ${region}`)
  const app = await buildServer({ logger: false, mcp })
  const seen: { method: string; name?: string; region?: string }[] = []
  app.addHook('onRequest', async (request) => {
    if (request.url !== '/mcp') return
    const h = request.headers
    seen.push({ method: String(h['mcp-method']), ...(h['mcp-name'] === undefined ? {} : { name: String(h['mcp-name']) }), ...(h['mcp-param-region'] === undefined ? {} : { region: String(h['mcp-param-region']) }) })
  })
  const envelopes: Record<string, unknown>[] = []
  app.addHook('preHandler', async (request) => {
    const meta = (request.body as { params?: { _meta?: Record<string, unknown> } } | undefined)?.params?._meta
    if (request.url === '/mcp' && meta !== undefined) envelopes.push(meta)
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`, seen, envelopes }
}

t.test('a 2026-07-28 upstream: its input_required rounds pass through, no instance holds them', async (t) => {
  const up = await upstream(t)
  const a = await serveUpstream(t, { url: up.url }, { server: { stateKeys: ring } })
  const b = await serveUpstream(t, { url: up.url }, { server: { stateKeys: ring } })
  t.equal(a.gw.modern, true, 'server/discover in 2026-07-28 said so')

  // Two rounds of update_work_item, the first on a, the second on b, the result on a.
  const args = { workItemId: 4522, fields: { 'System.State': 'Resolved' } }
  const first = await call(a.app, { method: 'POST', url: '/tools/update_work_item/calls', ...json({ arguments: args, _meta: ASKS }) })
  t.equal(first.status, 200)
  t.equal(first.body.resultType, 'input_required')
  const [k1, q1] = Object.entries(first.body.inputRequests as Record<string, { method: string; params: { message: string } }>)[0]!
  t.equal(q1.method, 'elicitation/create')
  t.match(q1.params.message, /requires a resolution/, "the upstream's own question")
  t.equal(a.gw.rounds.callers().length, 0, 'nothing waits upstream: the round is in the state')
  const second = await call(b.app, {
    method: 'POST',
    url: '/tools/update_work_item/calls',
    ...json({ arguments: args, inputResponses: { [k1]: accept({ resolution: 'Duplicate' }) }, requestState: first.body.requestState, _meta: ASKS })
  })
  t.equal(second.body.resultType, 'input_required', 'the second round, from the other instance')
  const [k2, q2] = Object.entries(second.body.inputRequests as Record<string, { params: { message: string } }>)[0]!
  t.match(q2.params.message, /which work item is the original/)
  const done = await call(a.app, {
    method: 'POST',
    url: '/tools/update_work_item/calls',
    ...json({ arguments: args, inputResponses: { [k2]: accept({ duplicateOfId: 1 }) }, requestState: second.body.requestState, _meta: ASKS })
  })
  t.equal(done.status, 200)
  t.same(done.body.content, [{ type: 'text', text: 'Bug #4522 resolved as Duplicate of Bug #1. State set to Resolved and duplicate link created.' }])

  // The sealed state is ours: another call's arguments, or a state tampered with, are refused here.
  const other = await call(a.app, {
    method: 'POST',
    url: '/tools/update_work_item/calls',
    ...json({ arguments: { ...args, workItemId: 1 }, inputResponses: { [k2]: accept({ duplicateOfId: 1 }) }, requestState: second.body.requestState, _meta: ASKS })
  })
  t.equal(other.status, 400, 'a state for other arguments')

  // Headers of 2026-07-28: Mcp-Name (base64 when not ASCII) and the mirrored parameters.
  const regional = await call(a.app, { method: 'POST', url: '/tools/regional/calls', ...json({ arguments: { region: 'eu-west' }, _meta: ASKS }) })
  t.same(regional.body.content, [{ type: 'text', text: 'in eu-west' }])
  t.match(up.seen.at(-1), { method: 'tools/call', name: 'regional', region: 'eu-west' })
  const accented = await call(a.app, { method: 'POST', url: `/resources/${encodeURIComponent('demo://items/café')}`, ...json({ _meta: ASKS }) })
  t.same(accented.body, { code: -32602, message: 'Resource not found: demo://items/café', data: { uri: 'demo://items/café' } }, "the upstream's error as it gave it")
  t.equal(up.seen.at(-1)!.name, headerText('demo://items/café'))
  t.match(headerText('demo://items/café'), /^=\?base64\?.+\?=$/, 'not ASCII: base64')

  // Resources and prompts go the same way; a caller that cannot be asked gets -32021 from the upstream.
  const roots = await call(a.app, { method: 'POST', url: `/resources/${encodeURIComponent('demo://roots')}`, ...json({ _meta: caps({ roots: {} }) }) })
  t.equal(roots.body.resultType, 'input_required')
  t.equal(Object.values(roots.body.inputRequests as Record<string, { method: string }>)[0]!.method, 'roots/list')
  const mute = await call(a.app, { method: 'POST', url: '/tools/get_weather/calls', ...json({ arguments: {}, _meta: caps({}) }) })
  t.same([mute.status, mute.body.code], [400, -32021], "the upstream's refusal, as it gave it")
  const weather = await call(a.app, { method: 'POST', url: '/tools/get_weather/calls', ...json({ arguments: { location: 'Paris' }, _meta: ASKS }) })
  t.match(weather.body.content[0].text, /^Weather in Paris: /, 'no question needed: the result at once')

  // The Tasks extension is not passed on: a task made upstream would be polled here, unknown.
  const extensions = { 'io.modelcontextprotocol/tasks': {}, 'example/other': {} }
  await call(a.app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { text: 'x' }, _meta: caps({ elicitation: {}, extensions }) }) })
  t.same(up.envelopes.at(-1)!['io.modelcontextprotocol/clientCapabilities'], { elicitation: {}, extensions: { 'example/other': {} } })
  await call(a.app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { text: 'x' }, _meta: caps({ extensions: { 'io.modelcontextprotocol/tasks': {} } }) }) })
  t.same(up.envelopes.at(-1)!['io.modelcontextprotocol/clientCapabilities'], {}, 'none left: no extensions at all')
})

t.test('a legacy caller of the gateway: the core asks it on /requests and drives the upstream rounds', async (t) => {
  const up = await upstream(t)
  const { app } = await serveUpstream(t, { url: up.url })
  const legacy = { 'mcp-protocol-version': '2025-11-25' }
  const hello = { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'old', version: '1' } }
  await call(app, { method: 'POST', url: '/initialize', headers: { ...legacy, 'content-type': 'application/json' }, payload: JSON.stringify(hello) })
  const pending = call(app, { method: 'POST', url: '/tools/get_weather/calls', headers: { ...legacy, 'content-type': 'application/json' }, payload: JSON.stringify({ arguments: {} }) })
  let asked: { status: number; headers: Record<string, unknown>; body: { method: string } } | undefined
  await until(async () => (asked = await call(app, { method: 'POST', url: '/requests', headers: legacy })).status === 200, 'the question on /requests')
  t.equal(asked!.body.method, 'elicitation/create')
  const answered = await call(app, {
    method: 'POST',
    url: '/responses',
    headers: { ...legacy, 'mcp-request-id': String(asked!.headers['mcp-request-id']), 'content-type': 'application/json' },
    payload: JSON.stringify(accept({ location: 'Oslo' }))
  })
  t.equal(answered.status, 202)
  const done = await pending
  t.match(done.body.content[0].text, /^Weather in Oslo: /)
})

t.test('a legacy-only Streamable HTTP upstream is not taken for a 2026-07-28 one', async (t) => {
  const everything = await everythingHttp(t)
  const { gw } = await serveUpstream(t, { url: everything.url })
  t.equal(gw.modern, false)
})

t.test('progress and log messages of a 2026-07-28 upstream reach the caller', async (t) => {
  const up = await upstream(t)
  const { app } = await serveUpstream(t, { url: up.url })
  const done = await call(app, { method: 'POST', url: '/tools/slow_compute/calls', ...json({ arguments: { n: 3 }, _meta: caps({}, { progressToken: 'p7' }) }) })
  t.match(done.body.content[0].text, /6/)
  const heard = await drain(app)
  const progress = heard.filter((n) => n.method === 'notifications/progress')
  t.ok(progress.length >= 1, `progress relayed (${progress.length})`)
  t.ok(progress.every((n) => n.params!.progressToken === 'p7'), "under the caller's own token")
})

/**
 * A Streamable HTTP upstream written by hand: a legacy session for the gateway's lists, and in
 * 2026-07-28 answers that go wrong in each way a network peer can.
 */
async function oddModern(t: Test) {
  const tools = ['nojson', 'noanswer', 'badevent', 'logs', 'huge', 'scalar', 'noresult', 'empty', 'auth', 'stall', 'drip']
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.on('data', (c) => (text += c))
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end()
      const msg = JSON.parse(text)
      const reply = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }))
      if (msg.id === undefined) return void res.writeHead(202).end()
      if (req.headers['mcp-protocol-version'] !== '2026-07-28') {
        if (msg.method === 'initialize') return reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'odd', version: '1' } })
        if (msg.method === 'tools/list') return reply({ tools: tools.map((name) => ({ name, inputSchema: { type: 'object' } })) })
        return reply({})
      }
      if (msg.method === 'server/discover') return reply({ supportedVersions: ['2026-07-28'], capabilities: {}, serverInfo: { name: 'odd', version: '1' } })
      const sse = (...events: string[]) => res.writeHead(200, { 'content-type': 'text/event-stream' }).end(events.map((e) => `data: ${e}\n\n`).join(''))
      switch (msg.params.name) {
        case 'nojson': return void res.writeHead(200, { 'content-type': 'text/plain' }).end('oops')
        case 'scalar': return void res.writeHead(200, { 'content-type': 'application/json' }).end('42')
        case 'noresult': return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id }))
        case 'empty': return void res.writeHead(204).end()
        case 'auth': return reply({ content: [{ type: 'text', text: String(req.headers.authorization) }] })
        case 'noanswer': return sse(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }))
        case 'badevent': return sse('{not json')
        // A stream that never says anything, and one that says something every 250 ms for 3 s.
        case 'stall': return void res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders()
        case 'drip': {
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          let n = 0
          const timer = setInterval(() => {
            const token = msg.params._meta.progressToken
            if (++n <= 12) return void res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: n } })}\n\n`)
            clearInterval(timer)
            res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'dripped' }], resultType: 'complete' } })}\n\n`)
          }, 250)
          return
        }
        case 'huge': return void res.writeHead(200, { 'content-type': 'application/json' }).end('"' + 'x'.repeat(33 * 1024 * 1024) + '"')
        case 'logs': return sse(
          JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'warning', data: 'careful' } }),
          JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'someone else', progress: 1 } }),
          '[1]',
          JSON.stringify({ jsonrpc: '2.0', id: msg.id, method: 'ping' }),
          JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'ok' }], resultType: 'complete' } })
        )
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
}

t.test('a 2026-07-28 upstream silent past the deadline: 504; one whose stream goes on is waited for', async (t) => {
  const odd = await oddModern(t)
  const { app, gw } = await serveUpstream(t, { url: odd }, { requestTimeoutMs: 2000 })
  t.equal(gw.modern, true)
  const tool = (name: string) => call(app, { method: 'POST', url: `/tools/${name}/calls`, ...json({ arguments: {}, _meta: caps({}) }) })
  const stalled = await tool('stall')
  t.same([stalled.status, stalled.body], [504, { code: -32603, message: 'The upstream server upstream did not answer in time (nothing from it for 2 s)' }])
  const dripped = await tool('drip')
  t.same([dripped.status, dripped.body.content], [200, [{ type: 'text', text: 'dripped' }]], '3 s of messages every 250 ms outlast a 2 s deadline')
})

t.test('a 2026-07-28 upstream that answers badly: a clear 502, never a hang or its text', async (t) => {
  const odd = await oddModern(t)
  const { app, gw } = await serveUpstream(t, { url: odd, headers: { authorization: 'Bearer upstream-own' } })
  t.equal(gw.modern, true)
  const tool = (name: string) => call(app, { method: 'POST', url: `/tools/${name}/calls`, ...json({ arguments: {}, _meta: caps({}, { 'io.modelcontextprotocol/logLevel': 'info' }) }) })
  t.same((await tool('nojson')).body, { code: -32603, message: 'The upstream server upstream answered 200 without JSON' })
  t.same((await tool('noanswer')).body, { code: -32603, message: 'The upstream server ended its stream without an answer' })
  const bad = await tool('badevent')
  t.same([bad.status, bad.body.code], [502, -32603])
  t.match(bad.body.message, /^The upstream server sent an event that is not JSON/)
  t.same((await tool('huge')).body, { code: -32603, message: "The upstream server's answer is too large" })
  t.same((await tool('scalar')).body, { code: -32603, message: 'The upstream server upstream answered no JSON-RPC message' })
  t.same((await tool('noresult')).body, { code: -32603, message: 'The upstream server upstream answered without a result' })
  t.same((await tool('empty')).body, { code: -32603, message: 'The upstream server upstream answered 204 without JSON' })
  t.same((await tool('auth')).body.content[0].text, 'Bearer upstream-own', "the upstream's own header, not the caller's")
  t.match(await drain(app), [{ method: 'notifications/message', params: { level: 'info', data: 'x' } }], 'the log of the stream that ended without an answer')
  const logs = await tool('logs')
  t.same(logs.body.content, [{ type: 'text', text: 'ok' }], 'what is not ours on the stream is passed over')
  const heard = await drain(app)
  t.match(heard, [{ method: 'notifications/message', params: { level: 'warning', data: 'careful' } }], 'the log message relayed, the stranger progress not')
  t.equal(heard.length, 1)

  // forwardAuthorization: the caller's token goes upstream instead (the app watches callers, as `serve` sets it up).
  const forwarded = await serveUpstream(t, { url: odd, headers: { authorization: 'Bearer upstream-own' }, forwardAuthorization: true })
  watchCallers(forwarded.app.server)
  await forwarded.app.listen({ host: '127.0.0.1', port: 0 })
  const res = await fetch(`http://127.0.0.1:${(forwarded.app.server.address() as AddressInfo).port}/tools/auth/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer the-caller' },
    body: JSON.stringify({ arguments: {}, _meta: caps({}) })
  })
  t.equal(((await res.json()) as { content: { text: string }[] }).content[0]!.text, 'Bearer the-caller')
})

t.test('a 2026-07-28 upstream that went away: 502 saying so', async (t) => {
  const up = await upstream(t)
  const { app, gw } = await serveUpstream(t, { url: up.url })
  t.equal(gw.modern, true)
  await up.app.close()
  const res = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { text: 'x' }, _meta: caps({}) }) })
  t.same([res.status, res.body.code], [502, -32603])
  t.match(res.body.message, /^The upstream server upstream failed: /)
})
