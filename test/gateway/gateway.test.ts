import type { AddressInfo } from 'node:net'
import t from 'tap'
import { call, json, legacyJson } from '../helpers/helper.js'
import { MODERN, envelope } from '../helpers/rpc.js'
import { caps, direct, drain, everythingStdio, serveUpstream, until } from '../helpers/gateway-helper.js'

// One gateway to server-everything (stdio) for the whole file: its child starts once.
t.test('server-everything over stdio, served over Pure HTTP', async (t) => {
  const { app, gw } = await serveUpstream(t, everythingStdio, { server: { pageSize: 5 } })
  // The upstream registers its capability-dependent tools after initialize and says list_changed.
  await until(() => gw.mcp.tools.has('trigger-elicitation-request'), 'the conditional tools')

  t.test('lists: fetched from the upstream, paged as ours, with ETags', async (t) => {
    const first = await call(app, { url: '/tools' })
    t.equal(first.status, 200)
    t.equal(first.body.tools.length, 5, 'a page of MCP_PAGE_SIZE')
    t.type(first.body.nextCursor, 'string')
    const names: string[] = []
    let cursor: string | undefined
    do {
      const page = await call(app, { url: `/tools${cursor === undefined ? '' : `?cursor=${encodeURIComponent(cursor)}`}` })
      names.push(...page.body.tools.map((x: { name: string }) => x.name))
      cursor = page.body.nextCursor
    } while (cursor !== undefined)
    for (const n of ['echo', 'get-sum', 'get-tiny-image', 'get-structured-content', 'trigger-long-running-operation', 'trigger-sampling-request']) {
      t.ok(names.includes(n), n)
    }
    const again = await app.inject({ url: '/tools', headers: { 'if-none-match': first.headers.etag as string } })
    t.equal(again.statusCode, 304, 'If-None-Match: 304')
    const prompts = await call(app, { url: '/prompts' })
    t.ok(prompts.body.prompts.some((p: { name: string }) => p.name === 'args-prompt'))
    const templates = await call(app, { url: '/resources/templates' })
    t.ok(templates.body.resourceTemplates.some((r: { uriTemplate: string }) => r.uriTemplate === 'demo://resource/dynamic/text/{resourceId}'))
    const resources = await call(app, { url: '/resources' })
    t.ok(resources.body.resources.length > 0)
  })

  t.test('tools: echo, get-sum, get-tiny-image, get-structured-content', async (t) => {
    const echo = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'hi' } }) })
    t.same(echo.body, { content: [{ type: 'text', text: 'Echo: hi' }], resultType: 'complete' })
    const sum = await call(app, { method: 'POST', url: '/tools/get-sum/calls', ...json({ arguments: { a: 2, b: 40 } }) })
    t.match(sum.body.content[0].text, /42/)
    const image = await call(app, { method: 'POST', url: '/tools/get-tiny-image/calls', ...json({ arguments: {} }) })
    const img = image.body.content.find((c: { type: string }) => c.type === 'image')
    t.equal(img.mimeType, 'image/png')
    t.ok(Buffer.from(img.data, 'base64').subarray(1, 4).toString() === 'PNG', 'a PNG')
    const weather = await call(app, { method: 'POST', url: '/tools/get-structured-content/calls', ...json({ arguments: { location: 'Chicago' } }) })
    t.match(weather.body.structuredContent, { temperature: Number, conditions: String, humidity: Number })
    // The upstream judges its arguments: what it answers the gateway's caller is what it answers a
    // client of its own (here an isError result in its words), not our validator's opinion.
    const own = await direct(t)
    for (const args of [{ a: 'x', b: 1 }, { a: '2', b: 40 }, { a: 2 }, { a: 1, b: 2, extra: true }]) {
      const expected = await own.callTool('get-sum', args)
      const bad = await call(app, { method: 'POST', url: '/tools/get-sum/calls', ...json({ arguments: args }) })
      if ('error' in expected) t.same(bad.body, expected.error, `${JSON.stringify(args)}: the upstream's error`)
      else t.same([bad.status, { ...bad.body, resultType: undefined }], [200, { ...expected, resultType: undefined }], `${JSON.stringify(args)}: the upstream's answer`)
    }
    // A name the upstream did not list goes to it all the same: its own answer for a tool it does not know.
    const expected = await own.callTool('nope', {})
    const unknown = await call(app, { method: 'POST', url: '/tools/nope/calls', ...json({ arguments: {} }) })
    if ('error' in expected) t.same(unknown.body, expected.error, "an unknown tool: the upstream's error")
    else t.same([unknown.status, { ...unknown.body, resultType: undefined }], [200, { ...expected, resultType: undefined }], "an unknown tool: the upstream's answer")
    const rpc = await call(app, {
      method: 'POST',
      url: '/mcp',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'nope' },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'nope', arguments: {}, _meta: envelope() } }
    })
    if ('error' in expected) t.same(rpc.body.error, expected.error, 'the same on /mcp')
    else t.same({ ...rpc.body.result, resultType: undefined }, { ...expected, resultType: undefined }, 'the same on /mcp')
  })

  t.test('OpenAPI: one typed operation per upstream tool', async (t) => {
    const doc = (await call(app, { url: '/openapi.json' })).body
    const op = doc.paths['/tools/get-structured-content/calls'].post
    t.equal(op.operationId, 'callTool_get-structured-content')
    t.same(op.requestBody.content['application/json'].schema.properties.arguments.properties.location.enum, ['New York', 'Chicago', 'Los Angeles'])
  })

  t.test('prompts with arguments; completions forwarded', async (t) => {
    const got = await call(app, { method: 'POST', url: '/prompts/args-prompt', ...json({ arguments: { city: 'Paris' } }) })
    t.equal(got.body.messages[0].content.text, "What's weather in Paris?")
    const header = await call(app, { url: '/prompts/args-prompt', headers: { 'mcp-arguments': JSON.stringify({ city: 'Oslo', state: 'Oslo' }) } })
    t.equal(header.body.messages[0].content.text, "What's weather in Oslo, Oslo?")
    const missing = await call(app, { url: '/prompts/args-prompt' })
    t.same([missing.status, missing.body.code], [400, -32602])
    const dept = await call(app, { method: 'POST', url: '/completions', ...json({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'S' } }) })
    t.same(dept.body.completion.values, ['Sales', 'Support'])
    const person = await call(app, {
      method: 'POST',
      url: '/completions',
      ...json({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'name', value: '' }, context: { arguments: { department: 'Sales' } } })
    })
    t.same(person.body.completion.values, ['David', 'Eve', 'Frank'], 'context arguments reach the upstream')
    const id = await call(app, {
      method: 'POST',
      url: '/completions',
      ...json({ ref: { type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }, argument: { name: 'resourceId', value: '1' } })
    })
    t.ok(id.body.completion.values.includes('1'), 'template variables complete upstream')
  })

  t.test('resources and templates read upstream', async (t) => {
    const listed = (await call(app, { url: '/resources' })).body.resources[0]
    const read = await call(app, { url: `/resources/${encodeURIComponent(listed.uri)}` })
    t.equal(read.body.contents[0].uri, listed.uri)
    const text = await call(app, { url: `/resources/${encodeURIComponent('demo://resource/dynamic/text/3')}` })
    t.match(text.body.contents[0].text, /^Resource 3:/)
    const blob = await call(app, { url: `/resources/${encodeURIComponent('demo://resource/dynamic/blob/2')}` })
    t.type(blob.body.contents[0].blob, 'string')
    const bad = await call(app, { url: `/resources/${encodeURIComponent('demo://resource/dynamic/text/x')}` })
    t.equal(bad.status >= 400, true, 'the upstream refuses a non-integer id')
    // A URI the upstream does not list goes to it all the same: its own refusal, in its words.
    const none = await call(app, { url: `/resources/${encodeURIComponent('other://nothing')}` })
    const own = await direct(t)
    const refused = (await own.client.readResource({ uri: 'other://nothing' }).catch((e: unknown) => e)) as { code: number; message: string; data?: unknown }
    // Its status is the binding's for a legacy upstream's code: -32002 404, -32602 400 (server-everything's SDK says -32602).
    t.same([none.status, none.body], [refused.code === -32002 ? 404 : 400, { code: refused.code, message: refused.message.replace(/^MCP error -?\d+: /, ''), ...(refused.data === undefined ? {} : { data: refused.data }) }])
  })

  t.test('elicitation through MRTR: input_required, then the retry answers the waiting upstream request', async (t) => {
    const meta = caps({ elicitation: {} })
    const first = await call(app, { method: 'POST', url: '/tools/trigger-elicitation-request/calls', ...json({ arguments: {}, _meta: meta }) })
    t.equal(first.body.resultType, 'input_required')
    const [key, request] = Object.entries(first.body.inputRequests as Record<string, { method: string; params: { requestedSchema: object } }>)[0]!
    t.equal(request.method, 'elicitation/create')
    t.match(request.params.requestedSchema, { type: 'object', properties: { name: { type: 'string' } } })
    const retry = (inputResponses: unknown, requestState = first.body.requestState) =>
      call(app, { method: 'POST', url: '/tools/trigger-elicitation-request/calls', ...json({ arguments: {}, _meta: meta, requestState, inputResponses }) })
    // An answer that fails the upstream's requestedSchema is refused here, and the round stays open.
    const wrong = await retry({ [key]: { action: 'accept', content: { email: 'not an email' } } })
    t.same([wrong.status, wrong.body.code], [400, -32602])
    const done = await retry({ [key]: { action: 'accept', content: { name: 'Ada', check: true } } })
    t.equal(done.body.resultType, 'complete')
    t.match(done.body.content[1].text, /Name: Ada/)
    const replay = await retry({ [key]: { action: 'accept', content: { name: 'Ada' } } })
    t.same([replay.status, replay.body.message], [400, 'Invalid or expired requestState'], 'a finished round is gone')
  })

  t.test("roots reach the upstream from the caller: get-roots-list lists the caller's roots", async (t) => {
    // server-everything asked for roots once at start, outside any call: refused (the gateway has none
    // of its own to give), so it asks again during this call, and the caller answers in a round.
    const meta = caps({ roots: {} })
    const roots = [{ uri: 'file:///work/project', name: 'project' }]
    let body = { arguments: {}, _meta: meta } as Record<string, unknown>
    let res = await call(app, { method: 'POST', url: '/tools/get-roots-list/calls', ...json(body) })
    let rounds = 0
    while (res.body.resultType === 'input_required') {
      const asked = Object.entries(res.body.inputRequests as Record<string, { method: string }>)
      t.same(asked.map(([, r]) => r.method), asked.map(() => 'roots/list'), 'the upstream asks for roots')
      body = { ...body, requestState: res.body.requestState, inputResponses: Object.fromEntries(asked.map(([key]) => [key, { roots }])) }
      res = await call(app, { method: 'POST', url: '/tools/get-roots-list/calls', ...json(body) })
      rounds++
    }
    t.ok(rounds >= 1, 'asked in a round')
    t.equal(res.body.resultType, 'complete')
    t.match(res.body.content[0].text, /Current MCP Roots \(1 total\)[\s\S]*project[\s\S]*URI: file:\/\/\/work\/project/)
  })

  t.test('sampling through MRTR; a client without the capability is 400 -32021 and the upstream call ends', async (t) => {
    const body = { arguments: { prompt: 'Say hi', maxTokens: 5 }, _meta: caps({ sampling: {} }) }
    const first = await call(app, { method: 'POST', url: '/tools/trigger-sampling-request/calls', ...json(body) })
    const [key, request] = Object.entries(first.body.inputRequests as Record<string, { method: string; params: { maxTokens: number } }>)[0]!
    t.same([request.method, request.params.maxTokens], ['sampling/createMessage', 5])
    const done = await call(app, {
      method: 'POST',
      url: '/tools/trigger-sampling-request/calls',
      ...json({ ...body, requestState: first.body.requestState, inputResponses: { [key]: { role: 'assistant', content: { type: 'text', text: 'hi!' }, model: 'test-model' } } })
    })
    t.match(done.body.content[0].text, /test-model/)
    const refused = await call(app, { method: 'POST', url: '/tools/trigger-sampling-request/calls', ...json({ arguments: { prompt: 'x' } }) })
    t.same([refused.status, refused.body.code, refused.body.data.requiredCapabilities], [400, -32021, { sampling: {} }])
    // A retry on this instance that cannot be asked the open question: the same refusal.
    const open = await call(app, { method: 'POST', url: '/tools/trigger-sampling-request/calls', ...json(body) })
    const retry = await call(app, {
      method: 'POST',
      url: '/tools/trigger-sampling-request/calls',
      ...json({ ...body, _meta: caps({}), requestState: open.body.requestState, inputResponses: {} })
    })
    t.same([retry.status, retry.body.code], [400, -32021])
  })

  t.test('legacy era: the upstream question goes to /requests while the call waits', async (t) => {
    const legacy = { 'mcp-protocol-version': '2025-11-25' }
    await app.inject({ method: 'POST', url: '/initialize', headers: legacy, payload: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'l', version: '1' } } })
    const pending = call(app, { method: 'POST', url: '/tools/trigger-elicitation-request/calls', payload: { arguments: {} }, headers: legacy })
    let asked
    await until(async () => (asked = await app.inject({ method: 'POST', url: '/requests', headers: legacy })).statusCode === 200, 'the question')
    t.equal(asked!.json().method, 'elicitation/create')
    const answered = await app.inject({
      method: 'POST',
      url: '/responses',
      headers: { ...legacy, 'mcp-request-id': asked!.headers['mcp-request-id'] as string },
      payload: { action: 'decline' }
    })
    t.equal(answered.statusCode, 202)
    const res = await pending
    t.match(res.body.content[0].text, /declined/i)
  })

  t.test('progress of the upstream reaches the caller', async (t) => {
    const res = await app.inject({
      method: 'POST',
      url: '/tools/trigger-long-running-operation/calls',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
      payload: { arguments: { duration: 0.2, steps: 2 } }
    })
    const events = res.payload.split('\n\n').filter((e) => e.startsWith('event: notification'))
    t.equal(events.length, 2, 'a progress event per step on the stream')
    t.match(res.payload, /"progress":2,"total":2/)
    t.match(res.payload, /event: result\ndata: .*Long running operation completed/)
  })

  t.test('log messages of the upstream reach the caller whose call is in flight', async (t) => {
    await call(app, { method: 'POST', url: '/notifications', headers: { 'mcp-message-group': 'none' } })
    const res = await app.inject({
      method: 'POST',
      url: '/tools/toggle-simulated-logging/calls',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
      payload: { arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } }
    })
    t.match(res.payload, /event: notification\ndata: \{"method":"notifications\/message","params":\{"level":"\w+","data":"[\w-]+ ?[Ll]evel/)
    await call(app, { method: 'POST', url: '/tools/toggle-simulated-logging/calls', ...json({ arguments: {} }) })
  })

  t.test('subscriptions: the upstream is subscribed, and its resources/updated reach the subscriber', async (t) => {
    const uri = (await call(app, { url: '/resources' })).body.resources[0].uri
    const sub = await app.inject({ method: 'POST', url: '/resources/subscribe', ...legacyJson({ uri }) })
    t.equal(sub.statusCode, 202)
    await drain(app)
    await call(app, { method: 'POST', url: '/tools/toggle-subscriber-updates/calls', ...json({ arguments: {} }) })
    let seen = false
    await until(async () => (seen ||= (await drain(app)).some((n) => n.method === 'notifications/resources/updated' && n.params?.uri === uri)), 'resources/updated')
    t.ok(seen)
    await call(app, { method: 'POST', url: '/tools/toggle-subscriber-updates/calls', ...json({ arguments: {} }) })
    const unsub = await app.inject({ method: 'POST', url: '/resources/unsubscribe', ...legacyJson({ uri }) })
    t.equal(unsub.statusCode, 202)
  })

  t.test('subscriptions/listen on /mcp: the upstream is subscribed, its resources/updated reach the stream', async (t) => {
    const uri = (await call(app, { url: '/resources' })).body.resources[1].uri as string
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo
    const stop = new AbortController()
    const res = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'l1', method: 'subscriptions/listen', params: { _meta: envelope(), notifications: { resourceSubscriptions: [uri] } } }),
      signal: stop.signal
    })
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ''
    /** The next event (a JSON-RPC message), skipping keep-alive comments. */
    const next = async (): Promise<{ method?: string; params?: Record<string, unknown> }> => {
      for (;;) {
        const end = buffer.indexOf('\n\n')
        if (end !== -1) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          if (!block.startsWith(':')) return JSON.parse(block.replace(/^data: /, ''))
          continue
        }
        const { value, done } = await reader.read()
        if (done) throw new Error('the stream ended')
        buffer += value
      }
    }
    t.same((await next()).params!.notifications, { resourceSubscriptions: [uri] }, 'acknowledged')
    t.equal(gw.mcp.watching(uri), 1, 'watched from this process')
    await call(app, { method: 'POST', url: '/tools/toggle-subscriber-updates/calls', ...json({ arguments: {} }) })
    let event = await next()
    while (event.method !== 'notifications/resources/updated') event = await next()
    t.equal(event.params!.uri, uri, "the upstream's update, on the stream: the upstream was subscribed for it")
    await call(app, { method: 'POST', url: '/tools/toggle-subscriber-updates/calls', ...json({ arguments: {} }) })
    stop.abort()
    await until(() => gw.mcp.watching(uri) === 0, 'the stream closed')
  })

  t.test('list_changed upstream: the list is fetched again and clients hear their own list_changed', async (t) => {
    const before = await call(app, { url: '/resources' })
    await drain(app)
    const made = await call(app, {
      method: 'POST',
      url: '/tools/gzip-file-as-resource/calls',
      ...json({ arguments: { name: 'hello.gz', data: 'data:text/plain;base64,aGVsbG8=' } })
    })
    t.notOk(made.body.isError, JSON.stringify(made.body))
    await until(() => [...gw.mcp.resources.keys()].some((u) => u.endsWith('hello.gz')), 'the new resource')
    const uris: string[] = []
    let cursor: string | undefined
    do {
      const page = await call(app, { url: `/resources${cursor === undefined ? '' : `?cursor=${encodeURIComponent(cursor)}`}` })
      uris.push(...page.body.resources.map((r: { uri: string }) => r.uri))
      cursor = page.body.nextCursor
    } while (cursor !== undefined)
    t.ok(uris.some((u) => u.endsWith('hello.gz')), 'listed')
    t.ok(uris.length > before.body.resources.length)
    const notes = await call(app, { url: '/notifications' })
    t.ok(notes.body.some((n: { method: string }) => n.method === 'notifications/resources/list_changed'))
  })
})
