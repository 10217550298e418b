import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js'
import { sleep } from '../../src/client/client.js'
import { PureHttpTransport, type JsonRpcMessage } from '../../src/client/sdk-transport.js'
import { sample } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { liveDemo, stub, type Live } from '../helpers/client-harness.js'
import { DEMO_TOOLS } from '../helpers/helper.js'

/** The SDK's Client with handlers for every question the demo asks, over the adapter. */
async function connect(t: Test, live: Live, protocolVersion?: string) {
  const client = new Client({ name: 'sdk-over-pure-http', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: {} } })
  const asked: string[] = []
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    const params = request.params as { message: string; requestedSchema: { properties: Record<string, unknown> } }
    asked.push(params.message)
    const props = Object.keys(params.requestedSchema.properties)
    if (props.includes('resolution')) return { action: 'accept', content: { resolution: 'Duplicate' } }
    if (props.includes('duplicateOfId')) return { action: 'accept', content: { duplicateOfId: 4301 } }
    if (props.includes('approve')) return { action: 'accept', content: { approve: true } }
    return { action: 'decline' }
  })
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///sdk', name: 'sdk' }] }))
  client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'sdk-model' }))
  // The adapter is a Transport as the SDK declares it (checked by the compiler).
  const transport: Transport = new PureHttpTransport({ url: live.url, protocolVersion, pollIntervalMs: 10 })
  await client.connect(transport)
  // Closed by each test before the server's own teardown (tap runs them first to last), else the
  // server waits for the poller's keep-alive connection.
  t.teardown(() => client.close())
  return { client, transport: transport as PureHttpTransport, asked }
}

/** A tool that reports progress, then waits until its request is aborted. */
function addWaitingTool(live: Live) {
  const state = { aborted: false, started: undefined as unknown as Promise<void> }
  let started!: () => void
  state.started = new Promise<void>((resolve) => (started = resolve))
  live.mcp.tool({ name: 'wait' }, async (_a, ctx) => {
    await ctx.progress(1, 2, 'half way')
    started()
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }))
    state.aborted = true
    return 'stopped'
  })
  return state
}

t.test('the SDK Client over the adapter, legacy era: every flow of the demo', async (t) => {
  const live = await liveDemo(t)
  const waiting = addWaitingTool(live)
  const told: unknown[] = []
  live.mcp.onClientNotification((_owner, n) => void told.push(n))
  const { client, transport, asked } = await connect(t, live)
  t.equal(client.getServerVersion()?.name, 'mcp-pure-http-demo')
  t.match(client.getInstructions(), /demo/)
  t.equal(transport.client.protocolVersion, '2025-11-25', 'the version the SDK asked for')
  t.same(told, [{ method: 'notifications/initialized' }], 'forwarded to POST /notifications')

  t.same((await client.listTools()).tools.map((x) => x.name), [...DEMO_TOOLS, 'wait'])
  t.same(await client.callTool({ name: 'echo', arguments: { text: 'über' } }), { content: [{ type: 'text', text: 'über' }] })
  t.same((await client.callTool({ name: 'add', arguments: { a: 1.5, b: 2 } })).structuredContent, { sum: 3.5 })
  const prompt = await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } })
  t.same(prompt.messages, [{ role: 'user', content: { type: 'text', text: 'Please write a short, warm greeting for Ada.' } }])
  t.same(await client.readResource({ uri: 'demo://items/2' }), {
    contents: [{ uri: 'demo://items/2', mimeType: 'application/json', text: '{"id":2,"name":"banana"}' }]
  })
  t.same((await client.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate), ['demo://items/{id}'])
  t.ok((await client.listResources()).resources.some((r) => r.uri === 'demo://numbers'))
  t.same((await client.listPrompts()).prompts.map((p) => p.name), ['greeting', 'code_review'])
  t.same((await client.complete({ ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: 'G' } })).completion.values, ['Grace'])
  t.same(await client.ping(), {})
  t.same(await client.setLoggingLevel('warning'), {})

  // Server-to-client requests of the legacy era: POST /requests, answered by the SDK's handlers.
  const updated = await client.callTool({ name: 'update_work_item', arguments: { workItemId: 4522, fields: { 'System.State': 'Resolved' } } })
  t.same(updated.content, [{ type: 'text', text: 'Bug #4522 resolved as Duplicate of Bug #4301. State set to Resolved and duplicate link created.' }])
  t.equal(asked.length, 2, 'two questions, both answered by the SDK')
  const roots = await client.readResource({ uri: 'demo://roots' })
  t.same(JSON.parse((roots.contents[0] as { text: string }).text), [{ uri: 'file:///sdk', name: 'sdk' }])

  // Errors keep their JSON-RPC code.
  await t.rejects(client.readResource({ uri: 'demo://items/9' }), { code: -32002, message: /Resource not found/ })
  await t.rejects(client.callTool({ name: 'nope' }), { code: -32602, message: /Unknown tool: nope/ })

  // Notifications from GET /notifications: resources/updated and list_changed.
  const updates: string[] = []
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri))
  let changed = 0
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++)
  await client.subscribeResource({ uri: 'demo://items/3' })
  await live.mcp.resourceUpdated('demo://items/3')
  live.mcp.tool({ name: 'late' }, () => 'late')
  while (updates.length === 0 || changed === 0) await sleep(10)
  t.same(updates, ['demo://items/3'])
  await client.unsubscribeResource({ uri: 'demo://items/3' })

  // Progress, then the SDK gives up: notifications/cancelled reaches the server by the call's Mcp-Request-Id.
  const progress: unknown[] = []
  const stop = new AbortController()
  const call = client.callTool({ name: 'wait' }, undefined, { signal: stop.signal, onprogress: (p) => void progress.push(p) })
  await waiting.started
  while (progress.length === 0) await sleep(10)
  t.same(progress, [{ progress: 1, total: 2, message: 'half way' }])
  stop.abort('enough')
  await t.rejects(call, /enough/)
  const cancelled = () => live.seen.find((s) => Array.isArray(s.body) && s.body[0]?.method === 'notifications/cancelled')
  while (!waiting.aborted || cancelled() === undefined) await sleep(10)
  t.match(cancelled()!.body, [{ params: { reason: 'enough' } }], 'the server was told, with the reason')
  await client.close()
})

t.test('the SDK Client over the adapter: tasks', async (t) => {
  const live = await liveDemo(t)
  const { client, asked } = await connect(t, live)
  await client.listTools() // the SDK learns which tools run as tasks
  const seen: string[] = []
  let result: unknown
  for await (const message of client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { n: 3 } })) {
    seen.push(message.type)
    if (message.type === 'result') result = message.result
  }
  t.equal(seen[0], 'taskCreated')
  t.equal(seen.at(-1), 'result')
  t.same((result as { structuredContent: unknown }).structuredContent, { sum: 6 })

  // A task that asks half way: tasks/result answers its input_required through the SDK's handler.
  let deployed: unknown
  for await (const message of client.experimental.tasks.callToolStream({ name: 'needs_input_task', arguments: {} })) {
    if (message.type === 'result') deployed = message.result
  }
  t.same((deployed as { content: unknown }).content, [{ type: 'text', text: 'Deployed.' }])
  t.ok(asked.includes('Deploy to production?'))

  // tasks/get and tasks/cancel, in the SDK's shape.
  let taskId = ''
  for await (const message of client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { n: 100 } })) {
    if (message.type === 'taskCreated') {
      taskId = message.task.taskId
      t.match(message.task, { status: 'working', ttl: 3_600_000, pollInterval: Number })
      const cancelled = await client.experimental.tasks.cancelTask(taskId)
      t.equal(cancelled.status, 'cancelled')
    }
    if (message.type === 'error') t.match(message.error.message, /was cancelled/)
  }
  t.equal((await client.experimental.tasks.getTask(taskId)).statusMessage, 'Cancelled by the client')
  await client.close()
})

t.test('the SDK Client over the adapter, 2026-07-28: discover, multi round-trip questions, sampling, log level', async (t) => {
  const urls: string[] = []
  const live = await liveDemo(t, { fault: (request) => ((urls.push(request.url), false)) })
  const model = resolver({ name: 'model', resolve: () => sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 }) })
  live.mcp.tool({ name: 'llm', resolvers: { model } }, (_a, ctx) => `model ${ctx.resolved.model.model}`)
  let meta: Record<string, unknown> = {}
  live.mcp.tool({ name: 'meta' }, (_a, ctx) => (((meta = ctx.meta as Record<string, unknown>), 'ok')))
  const { client, transport, asked } = await connect(t, live, '2026-07-28')
  t.equal(client.getServerVersion()?.name, 'mcp-pure-http-demo')
  t.equal(urls[0], '/discover', 'the handshake is server/discover')
  t.notOk(urls.some((u) => u === '/initialize' || u === '/requests'))
  t.equal(transport.client.legacy, false)
  const updated = await client.callTool({ name: 'update_work_item', arguments: { workItemId: 4522, fields: { 'System.State': 'Resolved' } } })
  t.match(updated.content, [{ text: /resolved as Duplicate of Bug #4301/ }])
  t.equal(asked.length, 2, 'input_required rounds, answered by the SDK')
  t.same((await client.callTool({ name: 'llm' })).content, [{ type: 'text', text: 'model sdk-model' }])
  const roots = await client.readResource({ uri: 'demo://roots' })
  t.same(JSON.parse((roots.contents[0] as { text: string }).text), [{ uri: 'file:///sdk', name: 'sdk' }])
  // A task the SDK did not ask for (it never listed the tools) is waited for by the adapter; a failed one is an error with its code.
  await t.rejects(client.callTool({ name: 'failing_job' }), { code: -32602, message: /could not find its input data/ })
  await client.setLoggingLevel('debug')
  await client.callTool({ name: 'meta' })
  t.equal(meta['io.modelcontextprotocol/logLevel'], 'debug')
  t.match(meta['io.modelcontextprotocol/clientCapabilities'], { elicitation: {}, sampling: {}, roots: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } })
  t.same(meta['io.modelcontextprotocol/clientInfo'], { name: 'sdk-over-pure-http', version: '1.0.0' })
  await client.close()
})

t.test('the adapter on its own: methods it lacks, stray responses, errors, closing', async (t) => {
  const live = await liveDemo(t)
  const transport = new PureHttpTransport({ url: live.url, retry: { attempts: 1 } })
  const heard: JsonRpcMessage[] = []
  let closed = 0
  transport.onmessage = (m) => void heard.push(m)
  transport.onclose = () => void closed++
  await transport.start()
  const reply = async (id: number) => {
    while (!heard.some((m) => m.id === id)) await sleep(5)
    return heard.find((m) => m.id === id)!
  }
  await transport.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '0' } } })
  t.equal((await reply(1)).result?.protocolVersion, '2025-11-25', 'a version the server lacks: its newest legacy one')
  await transport.send({ jsonrpc: '2.0', id: 2, method: 'tasks/list' })
  t.same((await reply(2)).error, { code: -32601, message: 'Method not found: tasks/list' })
  await transport.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 'x' } } })
  t.match((await reply(3)).result, { isError: true, content: [{ type: 'text', text: 'Invalid arguments for tool add: b must be number' }] })
  await transport.send({ jsonrpc: '2.0', id: 'nobody-asked', result: {} })
  await transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } })

  // An error answer is the SDK's refusal: the call ends as a tool error.
  const weather = transport.client.callTool('get_weather', {})
  while (!heard.some((m) => m.method === 'elicitation/create')) await sleep(5)
  const question = heard.find((m) => m.method === 'elicitation/create')!
  await transport.send({ jsonrpc: '2.0', id: question.id, error: { code: -32601, message: 'no form here' } })
  t.equal((await weather).isError, true)

  // The SDK cancels a call that waits for its answer (no reason given): the server is told, the SDK
  // gets no answer. The question still open is withdrawn when the transport closes.
  await transport.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'get_weather', arguments: {} } })
  while (heard.filter((m) => m.method === 'elicitation/create').length < 2) await sleep(5)
  await transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 4 } })
  const told = () => live.seen.find((s) => Array.isArray(s.body) && s.body[0]?.params?.reason === 'Cancelled by the client')
  while (told() === undefined) await sleep(5)
  await transport.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'get_weather', arguments: {} } })
  await transport.close()
  await transport.close()
  t.equal(closed, 1)
  t.ok(heard.some((m) => m.method === 'notifications/cancelled' && m.params?.reason === 'The transport was closed'))
  t.notOk(heard.some((m) => m.id === 4), 'a cancelled call is not answered')
  t.notOk(heard.some((m) => m.id === 5), 'nor one the close ended')

  // A failed poll goes to onerror, and polling goes on.
  const other = await liveDemo(t)
  const polling = new PureHttpTransport({ url: other.url, retry: { attempts: 1 }, pollIntervalMs: 5 })
  const errors: Error[] = []
  const replies: JsonRpcMessage[] = []
  polling.onerror = (e) => void errors.push(e)
  polling.onmessage = (m) => void replies.push(m)
  await polling.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', clientInfo: { name: 'raw', version: '0' } } })
  while (replies.length === 0) await sleep(5)
  t.equal(replies[0]?.result?.protocolVersion, '2025-06-18')
  await other.app.close()
  // A poll that lands while the server closes gets its 503; the ones after it, a refused connection.
  while (!errors.some((e) => /fetch failed/.test(e.message))) await sleep(5)
  t.same(errors.filter((e) => !/fetch failed/.test(e.message) && (e as { status?: number }).status !== 503), [], 'each failed poll reached onerror as a refusal or a 503')
  await polling.close()

  // A server without the Tasks extension: no tasks capability for the SDK.
  const s = await stub(t, { 'POST /initialize': [{ status: 200, body: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } } }] })
  const plain = new PureHttpTransport({ url: s.url })
  const answers: JsonRpcMessage[] = []
  plain.onmessage = (m) => void answers.push(m)
  await plain.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', clientInfo: { name: 'raw', version: '0' } } })
  while (answers.length === 0) await sleep(5)
  t.same(answers[0]?.result?.capabilities, { tools: {} })
  await plain.close()

  // A network failure is -32603.
  const down = new PureHttpTransport({ url: 'http://127.0.0.1:9', retry: { attempts: 1 } })
  const got: JsonRpcMessage[] = []
  down.onmessage = (m) => void got.push(m)
  await down.send({ jsonrpc: '2.0', id: 1, method: 'ping' })
  while (got.length === 0) await sleep(5)
  t.match(got[0]?.error, { code: -32603, message: 'fetch failed' })
})
