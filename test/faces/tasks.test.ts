import t from 'tap'
import * as v8 from 'node:v8'
import * as vm from 'node:vm'
import type { FastifyInstance, FastifyRequest, InjectOptions } from 'fastify'
import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { MemoryStore } from '../../src/store/memory.js'
import type { Principal } from '../../src/core/request-context.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { elicit } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import { encodeJsonHeader } from '../../src/headers.js'
import { build, call, coreContext } from '../helpers/helper.js'
import { buildServer } from '../../src/server.js'
import { isThenable } from '../../src/core/maybe-promise.js'
import type { ServedTask } from '../../src/tasks/task-methods.js'

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } }
const ASKING = { ...TASKS, elicitation: {}, roots: {}, sampling: {} }
const meta = (caps: Record<string, unknown> = TASKS) => ({ 'io.modelcontextprotocol/clientCapabilities': caps })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const DECLARED = { 'mcp-meta': encodeJsonHeader(meta()) }

/** A tasks/* request from a client that declares the extension, as the extension requires (Mcp-Meta). */
function taskCall(app: FastifyInstance, options: InjectOptions & { headers?: Record<string, string> }) {
  return call(app, { ...options, headers: { ...DECLARED, ...options.headers } })
}

async function start(app: FastifyInstance, tool: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return call(app, { method: 'POST', url: `/tools/${tool}/calls`, payload: { _meta: meta(), ...body }, headers })
}

async function until(app: FastifyInstance, id: string, done: (task: any) => boolean, headers: Record<string, string> = {}) {
  for (let i = 0; i < 200; i++) {
    const res = await taskCall(app, { url: `/tasks/${id}`, headers })
    if (done(res.body)) return res
    await sleep(10)
  }
  throw new Error(`task ${id} never got there`)
}

const demo = () => createDemoServer({ taskStepMs: 20 })

t.test('tasks/get, tasks/update and tasks/cancel refuse a client that did not declare the extension', async (t) => {
  const { app } = await build(t, { mcp: demo() })
  const id = (await start(app, 'failing_job')).body.taskId
  t.type(id, 'string')
  const cases = [
    { url: `/tasks/${id}` },
    { method: 'POST' as const, url: `/tasks/${id}/update`, payload: { inputResponses: {} } },
    { method: 'POST' as const, url: `/tasks/${id}/cancel` },
    { url: `/tasks/${id}`, headers: { 'mcp-meta': encodeJsonHeader(meta({})) } }
  ]
  for (const c of cases) {
    const res = await call(app, c)
    t.same([res.status, res.body.code, res.body.data], [400, -32021, { requiredCapabilities: TASKS }], `${c.method ?? 'GET'} ${c.url}`)
  }
  const inBody = await call(app, { method: 'POST', url: `/tasks/${id}/cancel`, payload: { _meta: meta() } })
  t.equal(inBody.status, 200, 'declared in the body _meta')
  const bare = await taskCall(app, { method: 'POST', url: `/tasks/${id}/cancel` })
  t.equal(bare.status, 200, 'a bare POST declares it in Mcp-Meta')
  const both = await call(app, { method: 'POST', url: `/tasks/${id}/cancel`, headers: DECLARED, payload: { _meta: meta() } })
  t.same([both.status, both.body.code], [400, -32602], 'not in both places')
})

t.test('negotiation: tasks only for clients that declare the extension', async (t) => {
  const { app } = await build(t, { mcp: demo() })
  const plain = await call(app, { method: 'POST', url: '/tools/slow_compute/calls', payload: { arguments: { n: 2 } } })
  t.same([plain.status, plain.body.structuredContent], [200, { sum: 3 }], 'optional: run inline for a client without the extension')
  const required = await call(app, { method: 'POST', url: '/tools/failing_job/calls', payload: {} })
  t.same([required.status, required.body.code], [400, -32021])
  t.same(required.body.data, { requiredCapabilities: TASKS })
  const listed = (await call(app, { url: '/tools' })).body.tools
  t.same(
    listed.filter((x: { execution?: unknown }) => x.execution).map((x: { name: string; execution: unknown }) => [x.name, x.execution]),
    [['slow_compute', { taskSupport: 'optional' }], ['failing_job', { taskSupport: 'required' }], ['needs_input_task', { taskSupport: 'required' }]]
  )
  t.same((await call(app, { url: '/discover' })).body.capabilities.extensions, { 'io.modelcontextprotocol/tasks': {}, 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } }, 'the demo has a view (echo_app)')
})

t.test('slow_compute leaves no abort listener behind per step (no MaxListenersExceededWarning)', async (t) => {
  const warnings: string[] = []
  const onWarning = (w: Error) => warnings.push(w.name)
  process.on('warning', onWarning)
  t.teardown(() => {
    process.off('warning', onWarning)
  })
  const { app } = await build(t, { mcp: createDemoServer({ taskStepMs: 1 }) })
  // Inline (no task): the request's own signal, read at every step; 12 steps passed the limit of 10.
  const res = await call(app, { method: 'POST', url: '/tools/slow_compute/calls', payload: { arguments: { n: 12 } } })
  t.same(res.body.structuredContent, { sum: 78 })
  await new Promise((resolve) => setImmediate(resolve))
  t.same(warnings, [])
})

t.test('a task id begins with a letter, every time', async (t) => {
  // A leading '-' was read as an option by `mcp-http tasks get <id>`. 64 ids, each of which would
  // begin with '-' or '_' one time in 32 without it.
  const { app } = await build(t, { mcp: demo() })
  const firsts = new Set<string>()
  for (let i = 0; i < 64; i++) firsts.add((await start(app, 'slow_compute', { arguments: { n: 1 } })).body.taskId[0])
  t.ok([...firsts].every((c) => /^[A-Za-f]$/.test(c)), `first characters: ${[...firsts].sort().join('')}`)
})

t.test('a task: 202 with Location and Retry-After, stored before the answer, polled to completion', async (t) => {
  const { app } = await build(t, { mcp: demo() })
  // Ten 20-ms steps: the GET right after the 202 has 200 ms to find the task still working.
  const created = await start(app, 'slow_compute', { arguments: { n: 10 } })
  t.equal(created.status, 202)
  const task = created.body
  t.match(task, { resultType: 'task', status: 'working', ttlMs: 3600000, pollIntervalMs: 500 })
  t.match(task.taskId, /^[A-Za-f][A-Za-z0-9_-]{21}$/, '127 random bits, a letter first')
  t.same(Object.keys(task).sort(), ['createdAt', 'lastUpdatedAt', 'pollIntervalMs', 'resultType', 'status', 'taskId', 'ttlMs'], 'the flat CreateTaskResult')
  t.equal(created.headers.location, `/tasks/${task.taskId}`)
  t.equal(created.headers['retry-after'], '1')
  const first = await taskCall(app, { url: created.headers.location as string })
  t.same([first.status, first.body.resultType, first.body.taskId], [200, 'complete', task.taskId], 'a GET right after the 202 finds it')
  t.equal(first.headers['retry-after'], '1')
  const same = await app.inject({ url: `/tasks/${task.taskId}`, headers: { ...DECLARED, 'if-none-match': first.headers.etag as string } })
  t.ok([200, 304].includes(same.statusCode))
  const done = await until(app, task.taskId, (b) => b.status === 'completed')
  t.same(done.body.result.structuredContent, { sum: 55 })
  t.equal(done.body.statusMessage, 'added 10 of 10', 'progress became the status message')
  t.equal(done.headers['retry-after'], undefined, 'no Retry-After once terminal')
  const cached = await app.inject({ url: `/tasks/${task.taskId}`, headers: { ...DECLARED, 'if-none-match': done.headers.etag as string } })
  t.equal(cached.statusCode, 304, 'cheap polling: 304 while nothing changed')
})

t.test('a store that hands out copies (not frozen records): every poll answers the task as it is now', async (t) => {
  // The memory store's records are frozen, so a served answer can be kept per record; a store's own
  // copies may change under it, so they are serialized each time.
  class Copying extends MemoryStore {
    constructor() {
      super()
      const own = this.tasks
      const getTask = own.getTask.bind(own)
      own.getTask = (owner: string, taskId: string) => {
        const record = getTask(owner, taskId)
        return record === undefined ? undefined : { ...record }
      }
    }
  }
  const { app } = await build(t, { mcp: demo(), store: new Copying() })
  const created = await start(app, 'slow_compute', { arguments: { n: 3 } })
  const first = await taskCall(app, { url: `/tasks/${created.body.taskId}` })
  t.equal(first.body.taskId, created.body.taskId)
  const done = await until(app, created.body.taskId, (b) => b.status === 'completed')
  t.same(done.body.result.structuredContent, { sum: 6 })
  t.not(done.headers.etag, first.headers.etag, 'a new ETag once it changed')
  const again = await taskCall(app, { url: `/tasks/${created.body.taskId}` })
  t.same([again.body, again.headers.etag], [done.body, done.headers.etag], 'the same answer while nothing changes')
})

t.test('failed is for JSON-RPC errors; a tool that fails completes with isError', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'broken', task: 'required' }, async () => {
    throw new Error('disk full')
  })
  const { app } = await build(t, { mcp })
  const failing = (await build(t, { mcp: demo() })).app
  const f = await start(failing, 'failing_job')
  const failed = await until(failing, f.body.taskId, (b) => b.status !== 'working')
  t.same([failed.body.status, failed.body.error], ['failed', { code: -32602, message: 'The job could not find its input data' }])
  const b = await start(app, 'broken')
  const completed = await until(app, b.body.taskId, (x) => x.status !== 'working')
  t.same([completed.body.status, completed.body.result], ['completed', { content: [{ type: 'text', text: 'disk full' }], isError: true }])
})

t.test('input mid-task: input_required, partial answers, ignored keys, checked answers', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'two_questions', task: 'required', pollIntervalMs: 10 }, async (_a, ctx) => {
    const a = await ctx.elicit('First?', Type.Object({ v: Type.String() }))
    const again = inputRequired({
      inputRequests: {
        x: { method: 'elicitation/create', params: { mode: 'form', message: 'X?', requestedSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } },
        y: elicit('Y?', Type.Object({ n: Type.Integer() }))
      }
    })
    if (ctx.inputResponses === undefined) return again
    const n = (k: string) => (ctx.inputResponses![k] as { content: { n: number } }).content.n
    return `${a.action === 'accept' ? a.content.v : '-'} ${n('x') + n('y')}`
  })
  const { app } = await build(t, { mcp })
  const id = (await start(app, 'two_questions', { _meta: meta(ASKING) })).body.taskId
  const asking = await until(app, id, (b) => b.status === 'input_required')
  t.same(Object.keys(asking.body.inputRequests), ['1.q'])
  const bad = await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '1.q': { action: 'accept', content: { v: 5 } } } } })
  t.same([bad.status, bad.body.code], [400, -32602])
  const ack = await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '1.q': { action: 'accept', content: { v: 'a' } }, nope: { action: 'accept' } } } })
  t.same([ack.status, ack.body], [200, { resultType: 'complete' }])
  const second = await until(app, id, (b) => b.status === 'input_required' && b.inputRequests['2.x'] !== undefined)
  t.same(Object.keys(second.body.inputRequests).sort(), ['2.x', '2.y'], 'keys are never reused over the task\'s life')
  await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '2.x': { action: 'accept', content: { n: 2 } }, '1.q': { action: 'accept', content: { v: 'late' } } } } })
  const partial = await taskCall(app, { url: `/tasks/${id}` })
  t.same([partial.body.status, Object.keys(partial.body.inputRequests)], ['input_required', ['2.y']], 'a partial answer leaves it input_required')
  await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '2.y': { action: 'accept', content: { n: 40 } } } } })
  const done = await until(app, id, (b) => b.status === 'completed')
  t.equal(done.body.result.content[0].text, 'a 42')
})

t.test('cancel: cooperative through the signal; unknown, expired and other principals\' tasks are 404', async (t) => {
  const seen: string[] = []
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'forever', task: 'required', taskTtlMs: 60_000 }, (_a, ctx) => new Promise((resolve) => {
    ctx.signal.addEventListener('abort', () => {
      seen.push((ctx.signal.reason as Error).message)
      resolve('stopped')
    })
  }))
  mcp.tool({ name: 'quick', task: 'required', taskTtlMs: 50 }, () => 'quick')
  const who = async (request: FastifyRequest): Promise<Principal> => ({ id: String(request.headers['x-user'] ?? 'alice'), scopes: [], anonymous: false })
  const { app } = await build(t, { mcp, authenticate: who })
  const id = (await start(app, 'forever')).body.taskId
  const bob = { 'x-user': 'bob' }
  for (const [method, url] of [['GET', `/tasks/${id}`], ['POST', `/tasks/${id}/update`], ['POST', `/tasks/${id}/cancel`]] as const) {
    const res = await taskCall(app, { method, url, headers: bob, ...(method === 'POST' ? { payload: url.endsWith('update') ? { inputResponses: {} } : {} } : {}) })
    t.same([res.status, res.body.code], [404, -32602], `bob: ${method} ${url}`)
  }
  const other = (await start(app, 'forever')).body.taskId
  // A cancellation heard from the store with no reason (as another instance may publish it).
  await mcp.store.signals.publishCancel('alice', `task:${other}`, undefined)
  t.equal((await until(app, other, (b) => b.status !== 'working')).body.result.content[0].text, 'stopped')
  const cancel = await taskCall(app, { method: 'POST', url: `/tasks/${id}/cancel`, payload: {} })
  t.same([cancel.status, cancel.body], [200, { resultType: 'complete' }])
  const cancelled = await until(app, id, (b) => b.status === 'cancelled')
  t.equal(cancelled.body.statusMessage, 'Cancelled by the client')
  await sleep(20)
  t.same(seen, ['The task was cancelled', 'Cancelled by the client'], 'the handlers saw their signals abort')
  t.equal((await taskCall(app, { url: `/tasks/${id}` })).body.status, 'cancelled', 'its late result did not overwrite the cancellation')
  const q = (await start(app, 'quick')).body.taskId
  await sleep(80)
  t.same((await taskCall(app, { url: `/tasks/${q}` })).status, 404, 'expired after its ttl')
  t.equal((await taskCall(app, { url: '/tasks/never-was' })).status, 404)
  const unknownCancel = await taskCall(app, { method: 'POST', url: '/tasks/never-was/cancel', payload: {} })
  t.equal(unknownCancel.status, 404)
})

t.test('multi round-trip before the task; notifications/tasks when asked; legacy clients declare tasks in initialize', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  const target = resolver({ name: 'target', resolve: () => elicit('Which environment?', Type.Object({ env: Type.String() })) })
  mcp.tool({ name: 'deploy', task: 'required', resolvers: { target } }, (_a, ctx) => `deployed to ${ctx.resolved.target.env}`)
  mcp.tool({ name: 'tiny', task: 'optional' }, async (_a, ctx) => {
    await ctx.task?.status('half way')
    return 'tiny'
  })
  const { app } = await build(t, { mcp })
  const caps = { ...TASKS, elicitation: {} }
  const round1 = await call(app, { method: 'POST', url: '/tools/deploy/calls', payload: { _meta: meta(caps) } })
  t.same([round1.status, round1.body.resultType], [200, 'input_required'], 'questions first, synchronously')
  const round2 = await call(app, {
    method: 'POST',
    url: '/tools/deploy/calls',
    payload: { _meta: meta(caps), requestState: round1.body.requestState, inputResponses: { target: { action: 'accept', content: { env: 'prod' } } } }
  })
  t.same([round2.status, round2.body.resultType], [202, 'task'], 'then the task')
  t.equal((await until(app, round2.body.taskId, (b) => b.status === 'completed')).body.result.content[0].text, 'deployed to prod')

  const watched = await start(app, 'tiny', { task: { notify: true, ttl: 5000 } })
  t.equal(watched.body.ttlMs, 5000, 'a client may ask for a shorter ttl')
  await until(app, watched.body.taskId, (b) => b.status === 'completed')
  const notes = (await app.inject({ url: '/notifications' })).json()
  t.same(notes.map((n: { method: string; params: { status: string; statusMessage?: string } }) => [n.method, n.params.status, n.params.statusMessage]), [
    ['notifications/tasks', 'working', 'half way'],
    ['notifications/tasks', 'completed', 'half way']
  ])
  t.same(notes[1].params.result, { content: [{ type: 'text', text: 'tiny' }] }, 'each carries the whole DetailedTask')

  const legacy = { 'mcp-protocol-version': '2025-11-25' }
  await app.inject({ method: 'POST', url: '/initialize', headers: legacy, payload: { protocolVersion: '2025-11-25', capabilities: { tasks: {} }, clientInfo: { name: 'l', version: '1' } } })
  const legacyTask = await call(app, { method: 'POST', url: '/tools/tiny/calls', payload: {}, headers: legacy })
  t.same([legacyTask.status, legacyTask.body.resultType], [202, 'task'])
})

t.test('inside a task: roots, sampling, plain progress, logs; a misused input_required fails the task', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'asks_all', task: 'required' }, async (_a, ctx) => {
    await ctx.progress(1)
    const afterFirst = ctx.task!.id
    void afterFirst
    await ctx.sendLog('info', 'kept in the server log only')
    const roots = await ctx.listRoots()
    await ctx.progress(2, 4)
    const llm = await ctx.sample({ messages: [], maxTokens: 1 })
    return `${roots.length} roots, model ${llm.model}`
  })
  mcp.tool({ name: 'misused', task: 'required' }, () => inputRequired({}))
  const { app } = await build(t, { mcp })
  const id = (await start(app, 'asks_all', { _meta: meta(ASKING) })).body.taskId
  const roots = await until(app, id, (b) => b.status === 'input_required')
  t.equal(roots.body.statusMessage, '1', 'progress without a message: the count')
  t.same(Object.values(roots.body.inputRequests).map((r: any) => r.method), ['roots/list'])
  await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '1.q': { roots: [{ uri: 'file:///x' }] } } } })
  await until(app, id, (b) => b.inputRequests?.['2.q'] !== undefined)
  await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '2.q': { role: 'assistant', content: {}, model: 'm9' } } } })
  const finished = await until(app, id, (b) => b.status === 'completed')
  t.equal(finished.body.result.content[0].text, '1 roots, model m9')
  t.equal(finished.body.statusMessage, '2/4')
  t.same((await app.inject({ url: '/notifications' })).json(), [], 'no log notifications from a task')
  const m = (await start(app, 'misused')).body.taskId
  const failed = await until(app, m, (b) => b.status !== 'working')
  t.same([failed.body.status, failed.body.error], ['failed', { code: -32603, message: 'Internal error' }])
})

t.test('demo: needs_input_task takes no for an answer', async (t) => {
  const { app } = await build(t, { mcp: demo() })
  const id = (await start(app, 'needs_input_task', { _meta: meta(ASKING) })).body.taskId
  await until(app, id, (b) => b.status === 'input_required')
  await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '1.q': { action: 'decline' } } } })
  t.equal((await until(app, id, (b) => b.status === 'completed')).body.result.content[0].text, 'Not deployed.')
})

t.test('demo: slow_compute cancelled mid-way; needs_input_task approved', async (t) => {
  const { app } = await build(t, { mcp: createDemoServer({ taskStepMs: 200 }) })
  const slow = (await start(app, 'slow_compute', { arguments: { n: 50 } })).body.taskId
  await until(app, slow, (b) => b.statusMessage !== undefined)
  await taskCall(app, { method: 'POST', url: `/tasks/${slow}/cancel`, payload: {} })
  const cancelled = await until(app, slow, (b) => b.status === 'cancelled')
  t.equal(cancelled.body.result, undefined, 'no result for a cancelled task')
  const approve = (await start(app, 'needs_input_task', { _meta: meta(ASKING) })).body.taskId
  await until(app, approve, (b) => b.status === 'input_required')
  await taskCall(app, { method: 'POST', url: `/tasks/${approve}/update`, payload: { inputResponses: { '1.q': { action: 'accept', content: { approve: true } } } } })
  t.equal((await until(app, approve, (b) => b.status === 'completed')).body.result.content[0].text, 'Deployed.')
  const done = await taskCall(app, { method: 'POST', url: `/tasks/${approve}/cancel` })
  t.equal(done.status, 200, 'cancelling a finished task is acknowledged')
  t.equal((await taskCall(app, { url: `/tasks/${approve}` })).body.status, 'completed', 'and changes nothing')
})

t.test('cancelling a task that waits for input stops the wait', async (t) => {
  const { app } = await build(t, { mcp: demo() })
  const id = (await start(app, 'needs_input_task', { _meta: meta(ASKING) })).body.taskId
  await until(app, id, (b) => b.status === 'input_required')
  await taskCall(app, { method: 'POST', url: `/tasks/${id}/cancel`, payload: {} })
  const task = await until(app, id, (b) => b.status === 'cancelled')
  t.equal(task.body.inputRequests, undefined, 'nothing is outstanding any more')
  const late = await taskCall(app, { method: 'POST', url: `/tasks/${id}/update`, payload: { inputResponses: { '1.q': { action: 'accept', content: { approve: true } } } } })
  t.same([late.status, late.body], [200, { resultType: 'complete' }], 'a late answer is acknowledged and ignored')
  t.equal((await taskCall(app, { url: `/tasks/${id}` })).body.status, 'cancelled')
})

t.test('a task never asks what the client did not declare: it fails with -32021', async (t) => {
  const { app } = await build(t, { mcp: demo() })
  const id = (await start(app, 'needs_input_task')).body.taskId
  const failed = await until(app, id, (b) => b.status !== 'working')
  t.same([failed.body.status, failed.body.error.code, failed.body.error.data], ['failed', -32021, { requiredCapabilities: { elicitation: {} } }])
})

t.test('a running task does not keep the HTTP response of the call that started it', async (t) => {
  // A task may run for an hour; the request's context reaches its response (and through it the
  // request), which must be collectable once the 202 is written. Over a real socket, as users call.
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc') as () => void
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  const mcp = new McpServer({ name: 'held', version: '1.0.0' })
  mcp.tool({ name: 'wait', title: 'Wait', task: 'optional' }, async () => {
    await held
    return 'done'
  })
  const app = await buildServer({ logger: false, mcp })
  let response: WeakRef<object> | undefined
  app.addHook('onResponse', (request, reply, done) => {
    if (request.url === '/tools/wait/calls') response = new WeakRef(reply.raw)
    done()
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const started = await fetch(`${base}/tools/wait/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ _meta: meta(), arguments: {}, task: {} })
  })
  t.equal(started.status, 202)
  const { taskId } = (await started.json()) as { taskId: string }
  t.ok(response, 'the response was seen')
  for (let i = 0; i < 10 && response!.deref() !== undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
  }
  t.equal(response!.deref(), undefined, 'the response is collected while the task runs')
  t.equal((await taskCall(app, { url: `/tasks/${taskId}` })).body.status, 'working', 'the task was still running then')
  release()
  const done = await until(app, taskId, (b) => b.status !== 'working')
  t.same([done.body.status, done.body.result.content], ['completed', [{ type: 'text', text: 'done' }]], 'and it finishes with its result')
})

// A poll the store answers at once (memory) takes no promise (see MaybePromise); an unknown task is
// refused at once too. A store that answers later (Redis) gets the same answer through a promise.
t.test('tasks/get from the memory store is answered at once; from a store that waits, through a promise', async (t) => {
  const mcp = new McpServer({ name: 'poll', version: '1.0.0' })
  const ctx = () => coreContext(mcp, TASKS)
  const now = new Date().toISOString()
  await mcp.store.tasks.createTask('anonymous', { taskId: 'polled', status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 2000, notify: false })
  const served = mcp.tasks.served(ctx(), 'polled')
  t.notOk(isThenable(served), 'a value, not a promise')
  t.match(served, { status: 'working', pollIntervalMs: 2000 })
  t.match(JSON.parse((served as ServedTask).representation.body), { resultType: 'complete', taskId: 'polled', status: 'working' })
  t.throws(() => mcp.tasks.served(ctx(), 'unknown'), { status: 404, message: 'Unknown task: unknown' }, 'an unknown task is refused at once')

  const memory = mcp.store as MemoryStore
  const later = new McpServer({ name: 'later', version: '1.0.0', store: Object.assign(Object.create(memory), { tasks: { getTask: async (o: string, id: string) => memory.tasks.getTask(o, id) } }) })
  const waited = later.tasks.served(ctx(), 'polled')
  t.ok(isThenable(waited), 'a store that answers with a promise: a promise')
  t.equal((await waited).representation.body, (served as ServedTask).representation.body, 'with the same answer')
  await t.rejects(Promise.resolve(later.tasks.served(ctx(), 'unknown')), { status: 404, message: 'Unknown task: unknown' })
})

t.test('the runner: a create that throws is a rejection; a change retried after an outage notifies the task as it is; a failed status update fails the work; notify is kept only when asked', async (t) => {
  const { startTask } = await import('../../src/tasks/runner.js')
  const { StoreUnavailable } = await import('../../src/store/store-errors.js')
  // The runner's pause before writing again does not keep the process alive (a server's handles do).
  const alive = setInterval(() => undefined, 1000)
  t.teardown(() => clearInterval(alive))
  const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet } as never
  const ctx = { requestId: '1', protocolVersion: '2026-07-28', era: 'modern', meta: undefined, clientCapabilities: {}, principal: { id: 'p' }, log: quiet, outlet: undefined } as never
  const options = { ttlMs: 60_000, pollIntervalMs: 1000, notify: true }
  const services = (tasks: object, pushed: (n: unknown) => void) => ({
    store: { tasks, mailbox: { pushNotification: async (_owner: string, n: unknown) => pushed(n) } },
    cancellations: { track: () => () => undefined },
    taskLeases: { until: () => 0, hold: () => () => undefined }
  }) as never

  // A store that throws instead of rejecting: startTask still answers with a promise.
  const thrower = services({ createTask: () => { throw new Error('not a promise') } }, () => undefined)
  let started: Promise<unknown> | undefined
  t.doesNotThrow(() => (started = startTask(thrower, ctx, options, () => 'x', () => ({}))))
  await t.rejects(started!, /not a promise/)

  // The end written, its answer lost to an outage: the retry finds the task ended already (undefined),
  // and the task as it is now is notified.
  const updates: unknown[] = []
  let notified!: (n: unknown) => void
  const notification = new Promise((resolve) => (notified = resolve))
  const ended = { taskId: 'x', status: 'completed', notify: true, createdAt: new Date().toISOString(), lastUpdatedAt: new Date().toISOString(), ttlMs: 60_000, pollIntervalMs: 1000, result: { content: [] } }
  const retried = services({
    createTask: async () => undefined,
    updateTask: async (_o: string, _id: string, patch: unknown) => {
      updates.push(patch)
      if (updates.length === 1) throw new StoreUnavailable()
      return undefined
    },
    getTask: async () => ended
  }, notified)
  await startTask(retried, ctx, options, () => 'done', () => ({ content: [] }))
  t.match(await notification, { method: 'notifications/tasks', params: { status: 'completed' } })
  t.equal(updates.length, 2, 'written once more')

  // The same for a task whose creator did not ask for notifications: nothing is pushed.
  const pushedQuietly: unknown[] = []
  let tries = 0
  let read!: () => void
  const reread = new Promise<void>((resolve) => (read = resolve))
  const unasked = services({
    createTask: async () => undefined,
    updateTask: async () => {
      if (++tries === 1) throw new StoreUnavailable()
      return undefined
    },
    getTask: async () => {
      read()
      return { ...ended, notify: false }
    }
  }, (n) => pushedQuietly.push(n))
  await startTask(unasked, ctx, { ...options, notify: false }, () => 'done', () => ({ content: [] }))
  await reread
  // Only promise jobs remain between the read and a push: a timer's turn comes after all of them.
  await new Promise((resolve) => setTimeout(resolve, 0))
  t.same([tries, pushedQuietly], [2, []], 'read again after the retry, and not notified')

  // A status update the store refuses (not an outage) fails the work: a completed task with isError.
  const patches: Array<{ status?: string; result?: unknown }> = []
  let done!: () => void
  const recorded = new Promise<void>((resolve) => (done = resolve))
  const refusing = services({
    createTask: async () => undefined,
    updateTask: async (_o: string, _id: string, patch: { status?: string; result?: unknown }) => {
      if (patch.status === undefined) throw new Error('the store refused it')
      patches.push(patch)
      done()
      return true
    }
  }, () => undefined)
  await startTask(refusing, ctx, options, async (tc) => {
    await tc.task.status('halfway')
    return 'never'
  }, () => ({ content: [] }))
  await recorded
  t.match(patches, [{ status: 'completed', result: { isError: true, content: [{ text: 'the store refused it' }] } }])

  // `ctx.task.status` needs no `this`: taken off the context, it still updates the task.
  const messages: Array<string | undefined> = []
  let told!: () => void
  const toldAll = new Promise<void>((resolve) => (told = resolve))
  const telling = services({
    createTask: async () => undefined,
    updateTask: async (_o: string, _id: string, patch: { status?: string; statusMessage?: string }) => {
      messages.push(patch.statusMessage ?? patch.status)
      if (patch.status === 'completed') told()
      return true
    }
  }, () => undefined)
  await startTask(telling, ctx, options, async (tc) => {
    const { id, status } = tc.task
    await status(`task ${id.length > 0 ? 'named' : 'unnamed'}, detached`)
    return 'done'
  }, () => ({ content: [] }))
  await toldAll
  t.strictSame(messages, ['task named, detached', 'completed'])

  // `notify` is kept only when asked for (absent is false to every reader): a field fewer a record.
  const records: Record<string, unknown>[] = []
  const keeping = services({ createTask: async (_o: string, task: Record<string, unknown>) => void records.push(task), updateTask: async () => true }, () => undefined)
  await startTask(keeping, ctx, { ...options, notify: false }, () => 'done', () => ({ content: [] }))
  await startTask(keeping, ctx, options, () => 'done', () => ({ content: [] }))
  t.strictSame(records.map((r) => r.notify), [undefined, true], 'not asked: no notify; asked: true')
})

t.test('tasks/get from a store that answers later: a task whose lease lapsed is failed first, then read again', async (t) => {
  const { findTask, INSTANCE_LOST } = await import('../../src/tasks/task-steps.js')
  const now = new Date().toISOString()
  let task = { taskId: 'x', status: 'working' as string, createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, leaseUntil: Date.now() - 1000 } as Record<string, unknown>
  const store = {
    tasks: {
      getTask: async () => task,
      takeLapsedTask: async (_o: string, _id: string, at: number, leaseUntil: number) => ((task.leaseUntil as number) < at ? (task = { ...task, leaseUntil }) : undefined),
      updateTask: async (_o: string, _id: string, patch: Record<string, unknown>) => {
        task = { ...task, ...patch }
        return true
      }
    },
    mailbox: {},
    signals: {}
  } as never
  const read = findTask({ store, leases: { until: () => Date.now() + 60_000 } }, 'p', 'x')
  t.ok(read instanceof Promise)
  t.match(await read, { status: 'failed', error: INSTANCE_LOST })

  // Another instance took it first (the store's take answers nothing): this read only reads it again.
  let other = { ...task, status: 'working', leaseUntil: Date.now() - 1000 } as Record<string, unknown>
  const taken = {
    tasks: {
      getTask: async () => other,
      takeLapsedTask: async () => {
        other = { ...other, status: 'failed', leaseUntil: Date.now() + 60_000 }
        return undefined
      },
      updateTask: async () => t.fail('the taker fails it, not this read')
    },
    mailbox: {},
    signals: {}
  } as never
  t.match(await findTask({ store: taken, leases: { until: () => Date.now() + 60_000 } }, 'p', 'x'), { status: 'failed' }, 'the task as the taker left it')
})

t.test('the sweep for lapsed tasks: a store that fails is logged and tried again; stopping waits for a sweep under way', async (t) => {
  const { TaskLeases } = await import('../../src/tasks/leases.js')
  let calls = 0
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  const store = {
    tasks: {
      lapsedTasks: async () => {
        calls++
        if (calls === 1) throw new Error('store down')
        await held
        return []
      }
    },
    mailbox: {}
  } as never
  const warned: string[] = []
  const leases = new TaskLeases(() => store, 30)
  leases.startSweeping({ warn: (_o: object, msg: string) => void warned.push(msg) } as never)
  while (calls < 2) await new Promise((resolve) => setTimeout(resolve, 5))
  t.same(warned, ['tasks: could not recover the tasks of a stopped instance; trying again at the next sweep'], 'the failure is logged, and the next sweep comes')
  let stopped = false
  const stopping = leases.stopSweeping().then(() => (stopped = true))
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(stopped, false, 'stopping waits for the sweep under way')
  release()
  await stopping
  t.equal(calls, 2, 'and no sweep starts after')
})
