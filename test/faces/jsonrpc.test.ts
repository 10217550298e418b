import t from 'tap'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { ConfigurationError, McpError, errors } from '../../src/errors.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { MemoryStore } from '../../src/store/memory.js'
import { DEMO_TOOLS, build, call } from '../helpers/helper.js'
import { LEGACY, MODERN, envelope, pureHeaders, rpc } from '../helpers/rpc.js'

type Era = 'modern' | 'legacy'
const ERAS: Era[] = ['modern', 'legacy']

/**
 * Arguments for every demo tool: a tool added to the demo without an entry here fails the test. The
 * task tools run inline for a client without the Tasks extension (slow_compute), or refuse it with
 * -32021 (the required ones): the same through both faces.
 */
const SAMPLES: Record<string, Record<string, unknown>> = {
  echo: { text: 'über' },
  add: { a: 1.5, b: 2 },
  get_weather: { location: 'Lisbon' },
  update_work_item: { workItemId: 7, fields: { 'System.Title': 'Renamed' } },
  slow_compute: { n: 2 },
  failing_job: {},
  needs_input_task: {},
  long_sum: { n: 1000 },
  echo_app: { text: 'view' }
}

t.test('every demo tool answers the same through Pure HTTP and through /mcp, in both eras', async (t) => {
  const { app, mcp } = await build(t, { mcp: createDemoServer({ taskStepMs: 1 }) })
  for (const era of ERAS) {
    for (const name of mcp.tools.keys()) {
      const args = SAMPLES[name]
      t.ok(args, `sample arguments for ${name}`)
      const pure = await call(app, { method: 'POST', url: `/tools/${name}/calls`, headers: pureHeaders(era), payload: JSON.stringify({ arguments: args }) })
      const json = await rpc(app, 'tools/call', { name, arguments: args }, { era, id: `${era}-${name}` })
      t.equal(json.headers['content-type'], 'application/json; charset=utf-8')
      t.equal(json.headers['mcp-protocol-version'], era === 'modern' ? MODERN : LEGACY)
      if (pure.status === 200) {
        t.equal(json.status, 200)
        t.same(json.body, { jsonrpc: '2.0', id: `${era}-${name}`, result: pure.body }, `${name} (${era})`)
        t.equal(pure.body.resultType, era === 'modern' ? 'complete' : undefined)
      } else {
        // A protocol error: the same error object; 2026-07-28 keeps -32021's 400, the rest rides in a 200.
        t.same(json.body, { jsonrpc: '2.0', id: `${era}-${name}`, error: pure.body }, `${name} (${era})`)
        t.equal(json.status, era === 'modern' && pure.body.code === -32021 ? 400 : 200)
      }
    }
    // Arguments that fail the input schema are the tool's failure (SEP-1303): the same isError result
    // on both faces in every era; an unknown tool stays a protocol error, the same object (in-band 200 on /mcp).
    const badPure = await call(app, { method: 'POST', url: '/tools/add/calls', headers: pureHeaders(era), payload: JSON.stringify({ arguments: { a: 'x', b: 1 } }) })
    const badJson = await rpc(app, 'tools/call', { name: 'add', arguments: { a: 'x', b: 1 } }, { era })
    t.same([badPure.status, badJson.status], [200, 200])
    t.same(badPure.body.content, [{ type: 'text', text: 'Invalid arguments for tool add: a must be number' }])
    t.equal(badPure.body.isError, true)
    t.same(badJson.body.result, badPure.body, `invalid arguments (${era})`)
    const unknownPure = await call(app, { method: 'POST', url: '/tools/nope/calls', headers: pureHeaders(era), payload: '{}' })
    const unknownJson = await rpc(app, 'tools/call', { name: 'nope' }, { era })
    t.same([unknownPure.status, unknownJson.status], [404, 200])
    t.same(unknownJson.body.error, unknownPure.body)
  }
})

t.test('lists, prompts, resources, templates and completions match the Pure HTTP answers', async (t) => {
  const { app } = await build(t)
  for (const era of ERAS) {
    const same = async (method: string, params: Record<string, unknown>, url: string, payload?: unknown) => {
      const pure = await call(app, { method: payload === undefined ? 'GET' : 'POST', url, headers: pureHeaders(era), ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }) })
      const json = await rpc(app, method, params, { era })
      t.equal(json.status, 200, `${method} (${era})`)
      t.same(json.body.result, pure.body, `${method} (${era})`)
      return json.body.result
    }
    const tools = await same('tools/list', {}, '/tools')
    t.same(tools.tools.map((x: { name: string }) => x.name), DEMO_TOOLS)
    await same('prompts/list', {}, '/prompts')
    await same('resources/list', {}, '/resources')
    await same('resources/templates/list', {}, '/resources/templates')
    await same('prompts/get', { name: 'greeting', arguments: { name: 'Ada' } }, '/prompts/greeting', { arguments: { name: 'Ada' } })
    await same('resources/read', { uri: 'demo://readme' }, `/resources/${encodeURIComponent('demo://readme')}`)
    await same('resources/read', { uri: 'demo://items/2' }, `/resources/${encodeURIComponent('demo://items/2')}`)
    const completion = { ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: 'a' } }
    const done = await same('completion/complete', completion, '/completions', completion)
    t.same(done.completion.values, ['Ada', 'Alan'])
  }
})

t.test('pagination: nextCursor from /mcp works as the cursor param, a bad cursor is -32602 in-band', async (t) => {
  const mcp = new McpServer({ name: 'p', version: '1', pageSize: 1 })
  mcp.tool({ name: 'one' }, () => '1')
  mcp.tool({ name: 'two' }, () => '2')
  const { app } = await build(t, { mcp })
  const first = await rpc(app, 'tools/list')
  t.same(first.body.result.tools.map((x: { name: string }) => x.name), ['one'])
  const second = await rpc(app, 'tools/list', { cursor: first.body.result.nextCursor })
  t.same(second.body.result.tools.map((x: { name: string }) => x.name), ['two'])
  const bad = await rpc(app, 'tools/list', { cursor: 'nope' })
  t.equal(bad.status, 200)
  t.equal(bad.body.error.code, -32602)
})

t.test('2026-07-28: server/discover, removed methods, cache hints, serverInfo in _meta', async (t) => {
  const { app, mcp } = await build(t)
  const res = await rpc(app, 'server/discover', {}, { id: 'd' })
  t.equal(res.status, 200)
  t.equal(res.body.id, 'd')
  t.same(res.body.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18'])
  t.same(res.body.result._meta, { 'io.modelcontextprotocol/serverInfo': mcp.serverInfo })
  t.same([res.body.result.resultType, res.body.result.ttlMs, res.body.result.cacheScope], ['complete', 0, 'private'])
  for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'nope/nope']) {
    const gone = await rpc(app, method, { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: 'c', version: '1' }, level: 'info', uri: 'demo://readme' }, { id: 9 })
    t.equal(gone.status, 404, method)
    t.same(gone.body, { jsonrpc: '2.0', id: 9, error: { code: -32601, message: `Method not found: ${method}` } })
  }
  const list = await rpc(app, 'resources/list')
  t.same([list.body.result.ttlMs, list.body.result.cacheScope], [0, 'private'])
  const read = await rpc(app, 'resources/read', { uri: 'demo://readme' })
  t.same([read.body.result.resultType, read.body.result.ttlMs, read.body.result.cacheScope], ['complete', 0, 'private'])
  // The Pure HTTP discover carries the same _meta in 2026-07-28, and none before.
  t.same((await call(app, { url: '/discover' })).body._meta, { 'io.modelcontextprotocol/serverInfo': mcp.serverInfo })
  t.equal((await call(app, { url: '/discover', headers: { 'mcp-protocol-version': LEGACY } })).body._meta, undefined)
})

t.test('legacy era: initialize, ping, setLevel, subscribe, capabilities kept for the connection', async (t) => {
  const store = new MemoryStore()
  const { app, mcp } = await build(t, { store })
  const init = { protocolVersion: LEGACY, capabilities: { roots: {} }, clientInfo: { name: 'legacy', version: '1' } }
  // No header at all: initialize is the legacy handshake by definition.
  const res = await call(app, { method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: init }) })
  t.equal(res.status, 200)
  t.equal(res.headers['mcp-protocol-version'], LEGACY)
  t.equal(res.headers['mcp-session-id'], undefined, 'stateless: no session')
  t.same(res.body.result, { protocolVersion: LEGACY, capabilities: mcp.capabilities(), serverInfo: mcp.serverInfo, instructions: mcp.instructions })
  t.same((await store.connections.getLegacyClient('anonymous'))?.capabilities, { roots: {} })
  // Asking for 2026-07-28 in a handshake gets the newest legacy version; an unknown one too.
  for (const asked of [MODERN, '1999-01-01']) {
    const r = await rpc(app, 'initialize', { ...init, protocolVersion: asked }, { era: 'legacy' })
    t.equal(r.body.result.protocolVersion, LEGACY)
  }
  t.same((await rpc(app, 'ping', {}, { era: 'legacy' })).body, { jsonrpc: '2.0', id: 1, result: {} })
  t.same((await rpc(app, 'logging/setLevel', { level: 'warning' }, { era: 'legacy' })).body.result, {})
  t.equal(await store.connections.getLogLevel('anonymous'), 'warning')
  t.same((await rpc(app, 'resources/subscribe', { uri: 'demo://items/1' }, { era: 'legacy' })).body.result, {})
  t.same(await store.connections.subscriptions('anonymous'), ['demo://items/1'])
  t.same((await rpc(app, 'resources/unsubscribe', { uri: 'demo://items/1' }, { era: 'legacy' })).body.result, {})
  t.same(await store.connections.subscriptions('anonymous'), [])
  const unknown = await rpc(app, 'resources/subscribe', { uri: 'demo://nothing' }, { era: 'legacy' })
  t.equal(unknown.status, 200, 'errors of a legacy-era request ride in a 200')
  t.same(unknown.body.error, { code: -32002, message: 'Resource not found: demo://nothing', data: { uri: 'demo://nothing' } })
  // server/discover and subscriptions/listen belong to 2026-07-28.
  for (const method of ['server/discover', 'subscriptions/listen']) {
    const r = await rpc(app, method, { notifications: {} }, { era: 'legacy' })
    t.same([r.status, r.body.error.code], [200, -32601], method)
  }
  // A legacy message without MCP-Protocol-Version is served as the default legacy version.
  const bare = await call(app, { method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })
  t.same([bare.status, bare.headers['mcp-protocol-version'], bare.body.result.resultType], [200, LEGACY, undefined])
  // ... or as the server's default version, when that is a legacy one.
  const old = await build(t, { defaultProtocolVersion: '2025-06-18' })
  const oldBare = await call(old.app, { method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) })
  t.same([oldBare.status, oldBare.headers['mcp-protocol-version'], oldBare.body.result], [200, '2025-06-18', {}])
})

t.test('MRTR over JSON-RPC: update_work_item asks twice, then completes; state works across faces', async (t) => {
  const { app } = await build(t)
  const caps = { elicitation: {} }
  const args = { workItemId: 4242, fields: { 'System.State': 'Resolved' } }
  const r1 = await rpc(app, 'tools/call', { name: 'update_work_item', arguments: args }, { caps })
  t.equal(r1.status, 200)
  t.equal(r1.body.result.resultType, 'input_required')
  t.same(Object.keys(r1.body.result.inputRequests), ['resolution'])
  t.equal(r1.body.result.inputRequests.resolution.method, 'elicitation/create')
  // The same first round through Pure HTTP asks the same question.
  const pure1 = await call(app, { method: 'POST', url: '/tools/update_work_item/calls', headers: pureHeaders('modern'), payload: JSON.stringify({ arguments: args, _meta: envelope(caps) }) })
  t.same(pure1.body.inputRequests, r1.body.result.inputRequests)

  const r2 = await rpc(app, 'tools/call', {
    name: 'update_work_item',
    arguments: args,
    inputResponses: { resolution: { action: 'accept', content: { resolution: 'Duplicate' } } },
    requestState: r1.body.result.requestState
  }, { caps, id: 2 })
  t.equal(r2.body.result.resultType, 'input_required')
  t.same(Object.keys(r2.body.result.inputRequests), ['duplicate_of'])

  const final = {
    name: 'update_work_item',
    arguments: args,
    inputResponses: { duplicate_of: { action: 'accept', content: { duplicateOfId: 4200 } } },
    requestState: r2.body.result.requestState
  }
  const r3 = await rpc(app, 'tools/call', final, { caps, id: 3 })
  const text = 'Bug #4242 resolved as Duplicate of Bug #4200. State set to Resolved and duplicate link created.'
  t.same(r3.body, { jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text }], resultType: 'complete' } })
  // requestState is bound to the principal, method, tool and arguments, not to the face.
  const viaPure = await call(app, { method: 'POST', url: '/tools/update_work_item/calls', headers: pureHeaders('modern'), payload: JSON.stringify({ ...final, name: undefined, _meta: envelope(caps) }) })
  t.same(viaPure.body, r3.body.result)
  // Tampered: -32602 in-band.
  const tampered = await rpc(app, 'tools/call', { ...final, requestState: `${final.requestState}x` }, { caps })
  t.same([tampered.status, tampered.body.error.code], [200, -32602])
})

t.test('MRTR for prompts/get and resources/read, and -32021 when the client lacks the capability', async (t) => {
  const { app } = await build(t)
  const p1 = await rpc(app, 'prompts/get', { name: 'code_review', arguments: { code: 'x = 1' } }, { caps: { elicitation: {} } })
  t.equal(p1.body.result.resultType, 'input_required')
  const p2 = await rpc(app, 'prompts/get', {
    name: 'code_review',
    arguments: { code: 'x = 1' },
    inputResponses: { tone: { action: 'accept', content: { tone: 'kind' } } },
    requestState: p1.body.result.requestState
  }, { caps: { elicitation: {} } })
  t.match(p2.body.result.messages[0].content.text, /kind tone/)
  const r1 = await rpc(app, 'resources/read', { uri: 'demo://roots' }, { caps: { roots: {} } })
  t.equal(r1.body.result.resultType, 'input_required')
  t.equal(r1.body.result.ttlMs, undefined, 'no cache hints on input_required')
  const r2 = await rpc(app, 'resources/read', {
    uri: 'demo://roots',
    inputResponses: { roots: { roots: [{ uri: 'file:///src' }] } },
    requestState: r1.body.result.requestState
  }, { caps: { roots: {} } })
  t.same(JSON.parse(r2.body.result.contents[0].text), [{ uri: 'file:///src' }])

  const missing = await rpc(app, 'tools/call', { name: 'get_weather', arguments: {} })
  t.equal(missing.status, 400, '-32021 keeps its 400 in 2026-07-28')
  t.same(missing.body.error, { code: -32021, message: 'This request needs the client capabilities: elicitation', data: { requiredCapabilities: { elicitation: {} } } })
  const legacy = await rpc(app, 'tools/call', { name: 'get_weather', arguments: {} }, { era: 'legacy' })
  t.same([legacy.status, legacy.body.error.code], [200, -32021], 'legacy era: in-band')
  // A legacy client that declared elicitation but takes no SSE cannot be asked on its POST's stream: told so at once.
  await rpc(app, 'initialize', { protocolVersion: LEGACY, capabilities: { elicitation: {}, roots: {}, experimental: {} }, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy' })
  const declared = await rpc(app, 'tools/call', { name: 'get_weather', arguments: {} }, { era: 'legacy' })
  t.equal(declared.body.error.code, -32021)
  t.match(declared.body.error.message, /is asked on the SSE stream of its POST: send Accept: application\/json, text\/event-stream/)
})

t.test('legacy era: notifications/cancelled names the JSON-RPC id and aborts that request', async (t) => {
  const mcp = new McpServer({ name: 'c', version: '1' })
  let started!: () => void
  const running = new Promise<void>((resolve) => (started = resolve))
  mcp.tool({ name: 'slow' }, (_a, ctx) => {
    started()
    return new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(`aborted: ${(ctx.signal.reason as Error).message}`)))
  })
  const { app } = await build(t, { mcp })
  const pending = rpc(app, 'tools/call', { name: 'slow' }, { era: 'legacy', id: 'slow-1' })
  await running
  const cancel = (params: unknown) =>
    call(app, { method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', 'mcp-protocol-version': LEGACY }, payload: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params }) })
  const bad = await cancel({ requestId: null })
  t.same([bad.status, bad.body], [400, { jsonrpc: '2.0', error: { code: -32602, message: 'notifications/cancelled needs params.requestId' } }])
  t.equal((await cancel({ requestId: 'other' })).status, 202, 'an unknown id is nothing to cancel')
  t.equal((await cancel({ requestId: 'slow-1', reason: 'user pressed stop' })).status, 202)
  const res = await pending
  t.same(res.body.result.content, [{ type: 'text', text: 'aborted: user pressed stop' }])
  // A 2026-07-28 client cancels by closing its connection; the notification is accepted and ignored.
  const modern = await call(app, {
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': MODERN, 'mcp-method': 'notifications/cancelled' },
    payload: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } })
  })
  t.equal(modern.status, 202)
})

t.test('progress and log notifications turn the response into an SSE stream, only when there are some', async (t) => {
  const store = new MemoryStore()
  const mcp = new McpServer({ name: 'n', version: '1', store })
  mcp.tool({ name: 'chatty', input: Type.Object({ fail: Type.Optional(Type.Boolean()) }) }, async ({ fail }, ctx) => {
    await ctx.progress(1, 2, 'half')
    await ctx.sendLog('debug', 'detail')
    await ctx.sendLog('error', 'something', 'db')
    if (fail === true) throw errors.invalidParams('Failed late')
    return 'done'
  })
  const { app } = await build(t, { mcp, store })
  const sse = { accept: 'application/json, text/event-stream' }
  const events = (raw: string) => raw.split('\n\n').filter((e) => e !== '').map((e) => JSON.parse(e.replace(/^data: /, '')))
  const progress = { method: 'notifications/progress', params: { progressToken: 't', progress: 1, total: 2, message: 'half' } }
  const error = { method: 'notifications/message', params: { level: 'error', data: 'something', logger: 'db' } }

  // 2026-07-28: the token and the level come with the request.
  const meta = { progressToken: 't', 'io.modelcontextprotocol/logLevel': 'warning' }
  const res = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'chatty', ...sse }, payload: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'chatty', _meta: { ...envelope(), ...meta } } }) })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/event-stream')
  t.equal(res.headers['mcp-protocol-version'], MODERN)
  t.same(events(res.payload), [
    { jsonrpc: '2.0', ...progress },
    { jsonrpc: '2.0', ...error },
    { jsonrpc: '2.0', id: 9, result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' } }
  ])
  // An error after the first notification is the stream's last event.
  const failed = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'chatty', ...sse }, payload: JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'chatty', arguments: { fail: true }, _meta: { ...envelope(), ...meta } } }) })
  t.same(events(failed.payload).at(-1), { jsonrpc: '2.0', id: 10, error: { code: -32602, message: 'Failed late' } })
  // Nothing asked for, or no SSE accepted: one JSON body, and nothing queued for the connection.
  for (const [params, headers] of [[{ name: 'chatty' }, sse], [{ name: 'chatty', _meta: meta }, {}]] as const) {
    const plain = await rpc(app, 'tools/call', params, { headers })
    t.same(plain.body.result.content, [{ type: 'text', text: 'done' }])
  }
  // Legacy era: the connection's logging/setLevel, and the token from _meta.
  await rpc(app, 'logging/setLevel', { level: 'debug' }, { era: 'legacy' })
  const legacy = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', 'mcp-protocol-version': LEGACY, ...sse }, payload: JSON.stringify({ jsonrpc: '2.0', id: 'l', method: 'tools/call', params: { name: 'chatty', _meta: { progressToken: 't' } } }) })
  t.same(events(legacy.payload).map((e) => e.method ?? 'response'), ['notifications/progress', 'notifications/message', 'notifications/message', 'response'])
  t.equal(await store.mailbox.takeNotifications('anonymous'), undefined)
})

t.test('handler failures: a tool error is a result, a library misuse is -32603 in-band', async (t) => {
  const mcp = new McpServer({ name: 'f', version: '1' })
  mcp.tool({ name: 'fails' }, () => {
    throw new Error('boom')
  })
  mcp.tool({ name: 'misused' }, () => {
    throw new ConfigurationError('wrong')
  })
  mcp.prompt({ name: 'broken' }, () => {
    throw new Error('prompt failed')
  })
  mcp.tool({ name: 'own-32021' }, () => {
    throw new McpError(-32021, 'A capability of its own', 400)
  })
  const { app } = await build(t, { mcp })
  const failed = await rpc(app, 'tools/call', { name: 'fails' })
  t.same(failed.body.result, { content: [{ type: 'text', text: 'boom' }], isError: true, resultType: 'complete' })
  for (const [method, params] of [['tools/call', { name: 'misused' }], ['prompts/get', { name: 'broken' }]] as const) {
    const res = await rpc(app, method, params)
    t.equal(res.status, 200)
    t.same(res.body.error, { code: -32603, message: 'Internal error' })
  }
  // A handler's own -32021 passes as it is (no data: nothing to explain about asking the client).
  const own = await rpc(app, 'tools/call', { name: 'own-32021' }, { era: 'legacy' })
  t.same(own.body.error, { code: -32021, message: 'A capability of its own' })
})

t.test('JSON Schema 2020-12 input schemas compile with a 2020-12 validator and keep their keywords', async (t) => {
  const mcp = new McpServer({ name: 's', version: '1' })
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: { n: { $anchor: 'num', type: 'number' } },
    properties: { x: { $ref: '#/$defs/n' }, tags: { type: 'array', prefixItems: [{ type: 'string' }], items: false } },
    required: ['x']
  }
  mcp.tool({ name: 'modern', input: Type.Unsafe(schema) }, (a) => JSON.stringify(a))
  t.throws(() => mcp.tool({ name: 'broken', input: Type.Unsafe({ ...schema, properties: { x: { type: 7 } } }) }, () => ''), /invalid JSON Schema/)
  const { app } = await build(t, { mcp })
  t.same((await rpc(app, 'tools/list')).body.result.tools[0].inputSchema, schema)
  t.equal((await rpc(app, 'tools/call', { name: 'modern', arguments: { x: 1, tags: ['a'] } })).body.result.content[0].text, '{"x":1,"tags":["a"]}')
  const bad = await rpc(app, 'tools/call', { name: 'modern', arguments: { x: 1, tags: ['a', 'b'] } })
  t.equal(bad.body.result.isError, true)
  t.match(bad.body.result.content[0].text, /^Invalid arguments for tool modern: tags/)
})

t.test('the endpoint can move or be switched off', async (t) => {
  const moved = await build(t, { jsonRpc: { path: '/rpc' } })
  t.equal((await rpc(moved.app, 'tools/list', {}, { url: '/rpc' })).status, 200)
  t.equal((await rpc(moved.app, 'tools/list')).status, 404)
  const off = await build(t, { jsonRpc: false })
  const res = await rpc(off.app, 'tools/list')
  t.same([res.status, res.body.code], [404, -32601])
  const prefixed = await build(t, { prefix: '/v1' })
  t.equal((await rpc(prefixed.app, 'tools/list', {}, { url: '/v1/mcp' })).status, 200)
})
