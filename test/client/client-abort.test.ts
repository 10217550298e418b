import t from 'tap'
import { Type } from '@sinclair/typebox'
import { PureHttpClient, isTask, sleep } from '../../src/client/client.js'
import { elicit } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { liveDemo, stub } from '../helpers/client-harness.js'

/** A tool that runs until its request is aborted; `running` resolves when it starts, `stopped` when it has seen the abort. */
function waitingTool() {
  let started!: () => void
  let ended!: () => void
  let requestId = ''
  const running = new Promise<void>((resolve) => (started = resolve))
  const stopped = new Promise<void>((resolve) => (ended = resolve))
  const handler = async (_args: unknown, ctx: { signal: AbortSignal; requestId: string }) => {
    requestId = ctx.requestId
    started()
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }))
    ended()
    return 'stopped'
  }
  return { running, stopped, handler, id: () => requestId }
}

t.test('an aborted tool call, prompt or read is cancelled on the server by its Mcp-Request-Id', async (t) => {
  const live = await liveDemo(t)
  const tool = waitingTool()
  live.mcp.tool({ name: 'wait' }, tool.handler)
  const client = new PureHttpClient({ url: live.url })
  const stop = new AbortController()
  const call = client.callTool('wait', {}, { signal: stop.signal })
  await tool.running
  stop.abort(new Error('No longer needed'))
  await t.rejects(call, { message: 'No longer needed' }, 'the call rejects with the reason')
  await tool.stopped
  const cancel = live.seen.find((s) => s.method === 'POST' && s.url === '/notifications')
  t.equal(cancel?.status, 202)
  t.same(cancel?.body, [{ method: 'notifications/cancelled', params: { requestId: tool.id(), reason: 'No longer needed' } }], 'names the call, sent before the call rejects')

  // A read (GET) in flight, aborted with a reason that is not an Error.
  const reading = waitingTool()
  live.mcp.resource({ uri: 'x:slow', name: 'slow' }, reading.handler as never)
  const readStop = new AbortController()
  const read = client.readResource('x:slow', { signal: readStop.signal })
  await reading.running
  readStop.abort('window closed')
  t.equal(await read.catch((e: unknown) => e), 'window closed')
  const readId = reading.id()
  t.ok(live.seen.some((s) => Array.isArray(s.body) && s.body[0].params.requestId === readId && s.body[0].params.reason === 'window closed'))

  // Already aborted: nothing is sent at all.
  const before = live.seen.length
  await t.rejects(client.listTools({ signal: AbortSignal.abort(new Error('too late')) }), { message: 'too late' })
  await t.rejects(client.getPrompt('greeting', { name: 'Ada' }, { signal: AbortSignal.abort() }), { name: 'AbortError' })
  t.equal(live.seen.length, before)
})

t.test('an aborted task is cancelled through its cancel route', async (t) => {
  const live = await liveDemo(t)
  const client = new PureHttpClient({ url: live.url })
  const stop = new AbortController()
  let taskId = ''
  const statuses: string[] = []
  const call = client.callTool('slow_compute', { n: 100 }, {
    signal: stop.signal,
    onTask: (task) => {
      taskId = task.taskId
      statuses.push(task.status)
      if (statuses.length === 2) stop.abort(new Error('Interrupted'))
    }
  })
  await t.rejects(call, { message: 'Interrupted' })
  t.equal((await client.getTask(taskId)).status, 'cancelled', 'cancelled on the server before the call rejected')
  t.equal(live.seen.filter((s) => s.url === `/tasks/${taskId}/cancel`).length, 1)

  // wait: false answers the task itself; taskResult() waits for it later.
  const created = await client.callTool('slow_compute', { n: 2 }, { wait: false, task: { ttl: 60_000 } })
  t.match(created, { resultType: 'task', status: 'working', ttlMs: 60_000 })
  t.ok(isTask(created))
  if (!isTask(created)) return
  t.same((await client.taskResult(created.taskId)).structuredContent, { sum: 3 })
})

t.test('an abort reaches the handler that is asking, and ends the round loop', async (t) => {
  const live = await liveDemo(t)
  const answers = resolver({ name: 'answers', resolve: () => elicit('Name?', Type.Object({ name: Type.String() })) })
  live.mcp.tool({ name: 'ask', resolvers: { answers } }, () => 'never')
  const stop = new AbortController()
  let seen: AbortSignal | undefined
  const client = new PureHttpClient({
    url: live.url,
    handlers: {
      elicit: async (_params, { signal }) => {
        seen = signal
        stop.abort(new Error('The user left'))
        return { action: 'decline' }
      }
    }
  })
  await t.rejects(client.callTool('ask', {}, { signal: stop.signal }), { message: 'The user left' })
  t.equal(seen, stop.signal)
  t.equal(live.seen.filter((s) => s.url === '/tools/ask/calls').length, 1, 'no second round')
})

t.test('an abort during a retry pause rejects at once, with nothing to cancel', async (t) => {
  const s = await stub(t, {
    'POST /tools/busy/calls': [{ status: 503, body: { code: -32603, message: 'busy' }, headers: { 'retry-after': '3600' } }]
  })
  // Abort once the client has read the 503 (so it is in its pause), not merely once the stub has
  // seen the request: an abort while the answer is still on its way rightly cancels on the server.
  let answered = 0
  const realFetch = globalThis.fetch
  globalThis.fetch = (async (...args: Parameters<typeof fetch>) => {
    const res = await realFetch(...args)
    const text = res.text.bind(res)
    Object.defineProperty(res, 'text', {
      value: async () => {
        const body = await text()
        answered++
        return body
      }
    })
    return res
  }) as typeof fetch
  t.teardown(() => {
    globalThis.fetch = realFetch
  })
  const client = new PureHttpClient({ url: s.url })
  const stop = new AbortController()
  const call = client.callTool('busy', {}, { signal: stop.signal })
  while (answered === 0) await sleep(5)
  stop.abort(new Error('enough'))
  await t.rejects(call, { message: 'enough' })
  t.same(s.requests.map((r) => r.key), ['POST /tools/busy/calls'], 'no notifications/cancelled for a request that ended')
})

t.test('log level in the _meta envelope, client notifications, capabilities and info', async (t) => {
  const live = await liveDemo(t)
  let meta: any
  live.mcp.tool({ name: 'meta' }, (_a, ctx) => (((meta = ctx.meta), 'ok')))
  const heard: unknown[] = []
  live.mcp.onClientNotification((_owner, n) => void heard.push(n))
  const client = new PureHttpClient({ url: live.url })
  await client.setLogLevel('debug')
  t.equal(client.logLevel, 'debug')
  await client.callTool('meta')
  t.equal(meta['io.modelcontextprotocol/logLevel'], 'debug')
  await client.notify([{ method: 'notifications/roots/list_changed' }])
  t.same(heard, [{ method: 'notifications/roots/list_changed' }])
  client.clientCapabilities = { elicitation: {} }
  client.info = { name: 'other', version: '2' }
  await client.callTool('meta')
  t.same(meta['io.modelcontextprotocol/clientCapabilities'], { elicitation: {} })
  t.same(meta['io.modelcontextprotocol/clientInfo'], client.info)
  t.equal(await client.pollNotifications(undefined, { signal: new AbortController().signal }), false)
  const legacy = new PureHttpClient({ url: live.url, protocolVersion: '2025-11-25' })
  await legacy.initialize({ signal: new AbortController().signal })
  t.equal(await legacy.pollRequests({ signal: new AbortController().signal }), false)
})
