import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { answerTask } from '../../src/tasks/task-steps.js'
import type { Store } from '../../src/store/types.js'
import { RedisStore } from '../../src/store/redis.js'
import { build, call } from '../helpers/helper.js'
import { startRedis } from '../helpers/redis-server.js'
import { LEGACY, envelope, rpc, type RpcOptions } from '../helpers/rpc.js'

/**
 * The Tasks extension on /mcp: tasks/get, tasks/update and tasks/cancel over the same src/tasks
 * functions as GET /tasks/{id} and its siblings, for a client that declared the extension.
 */
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } }
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A tasks/* request; in 2026-07-28 with the Mcp-Name header that mirrors its taskId. */
const rpcTask = (app: FastifyInstance, method: string, params: { taskId: string } & Record<string, unknown>, opts: RpcOptions = { caps: TASKS }) =>
  rpc(app, method, params, opts.era === 'legacy' ? opts : { ...opts, headers: { 'mcp-name': params.taskId, ...opts.headers } })

async function until(app: FastifyInstance, taskId: string, done: (task: any) => boolean, opts: RpcOptions = { caps: TASKS }) {
  for (let i = 0; i < 200; i++) {
    const res = await rpcTask(app, 'tasks/get', { taskId }, opts)
    if (done(res.body.result)) return res.body.result
    await sleep(10)
  }
  throw new Error(`task ${taskId} never got there`)
}

t.test('a task through /mcp: created, polled, asked, answered, done', async (t) => {
  const { app } = await build(t, { mcp: createDemoServer({ taskStepMs: 20 }) })
  const created = await rpc(app, 'tools/call', { name: 'needs_input_task', arguments: {} }, { caps: { ...TASKS, elicitation: {} } })
  t.match(created.body.result, { resultType: 'task', status: 'working', taskId: String })
  const taskId = created.body.result.taskId as string

  const waiting = await until(app, taskId, (x) => x.status === 'input_required')
  t.equal(waiting.resultType, 'complete')
  const [key] = Object.keys(waiting.inputRequests)
  t.equal(waiting.inputRequests[key!].method, 'elicitation/create')
  // An answer that does not fit its question: -32602 in a 200 (a JSON-RPC error), the task still waits.
  const wrong = await rpcTask(app, 'tasks/update', { taskId, inputResponses: { [key!]: { action: 'accept', content: { approve: 'yes' } } } }, { caps: TASKS })
  t.same([wrong.status, wrong.body.error.code], [200, -32602])
  const ack = await rpcTask(app, 'tasks/update', { taskId, inputResponses: { [key!]: { action: 'accept', content: { approve: true } } } }, { caps: TASKS })
  t.same(ack.body.result, { resultType: 'complete' })
  const done = await until(app, taskId, (x) => x.status === 'completed')
  t.same(done.result.content, [{ type: 'text', text: 'Deployed.' }])
  // Cancelling what is finished is the same ack, and changes nothing.
  t.same((await rpcTask(app, 'tasks/cancel', { taskId }, { caps: TASKS })).body.result, { resultType: 'complete' })
  t.equal((await until(app, taskId, () => true)).status, 'completed')
})

t.test('cancel, unknown ids, the capability gate and the removed v1 methods', async (t) => {
  const { app } = await build(t, { mcp: createDemoServer({ taskStepMs: 1000 }) })
  const { taskId } = (await rpc(app, 'tools/call', { name: 'slow_compute', arguments: { n: 50 } }, { caps: TASKS })).body.result
  t.same((await rpcTask(app, 'tasks/cancel', { taskId }, { caps: TASKS })).body.result, { resultType: 'complete' })
  t.equal((await until(app, taskId, (x) => x.status === 'cancelled')).status, 'cancelled')

  for (const [method, params] of [['tasks/get', {}], ['tasks/update', { inputResponses: {} }], ['tasks/cancel', {}]] as const) {
    const unknown = await rpcTask(app, method, { taskId: 'nope', ...params })
    t.same([unknown.status, unknown.body.error.code, unknown.body.error.message], [200, -32602, 'Unknown task: nope'], method)
    const gated = await rpcTask(app, method, { taskId, ...params }, {})
    t.same([gated.status, gated.body.error.code, gated.body.error.data], [400, -32021, { requiredCapabilities: TASKS }], `${method} without the extension`)
  }
  for (const method of ['tasks/result', 'tasks/list']) {
    t.equal((await rpcTask(app, method, { taskId })).body.error.code, -32601, `${method} is gone in the extension`)
  }
  const bad = await rpc(app, 'tasks/get', { taskId: '' }, { era: 'legacy' })
  t.same([bad.status, bad.body.error.code], [200, -32602])
})

t.test("legacy era: the extension's tasks for a client that declared it, none for 2025-11-25's own tasks capability", async (t) => {
  const { app } = await build(t, { mcp: createDemoServer({ taskStepMs: 20 }) })
  const init = (capabilities: object) =>
    rpc(app, 'initialize', { protocolVersion: LEGACY, capabilities, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy' })
  await init({ tasks: { requests: { tools: { call: {} } } } })
  const native = await rpc(app, 'tools/call', { name: 'slow_compute', arguments: { n: 1 } }, { era: 'legacy' })
  t.same(native.body.result.structuredContent, { sum: 1 }, 'run inline: this face speaks the extension only')
  t.equal((await rpcTask(app, 'tasks/get', { taskId: 'x' }, { era: 'legacy' })).body.error.code, -32021)

  await init(TASKS)
  const created = await rpc(app, 'tools/call', { name: 'slow_compute', arguments: { n: 1 } }, { era: 'legacy' })
  t.equal(created.body.result.resultType, 'task')
  const done = await until(app, created.body.result.taskId, (x) => x.status === 'completed', { era: 'legacy' })
  t.same(done.result.structuredContent, { sum: 1 })
})

t.test('a task that expires between its lookup and its answers is unknown', async (t) => {
  const task = { taskId: 'gone', status: 'input_required', inputRequests: {} }
  const store = { tasks: { getTask: async () => task, answerTask: async () => undefined } } as unknown as Store
  await t.rejects(answerTask({ store, leases: { until: () => Date.now() + 60_000 } }, 'o', 'gone', {}), { code: -32602, status: 404, message: 'Unknown task: gone' })
})

t.test('tasks/get on /mcp answers the task GET /tasks/{id} serves, in memory and in Redis (the store\'s own JSON text)', async (t) => {
  const redis = await startRedis()
  const redisStore = new RedisStore({ url: redis.url })
  t.teardown(async () => {
    await redisStore.close()
    await redis.stop()
  })
  for (const store of [undefined, redisStore]) {
    const { app } = await build(t, { mcp: createDemoServer({ taskStepMs: 5 }), ...(store === undefined ? {} : { store }) })
    const { taskId } = (await rpc(app, 'tools/call', { name: 'slow_compute', arguments: { n: 3 } }, { caps: TASKS })).body.result
    const done = await until(app, taskId, (x) => x.status === 'completed')
    const rest = await call(app, { url: `/tasks/${taskId}`, headers: { 'mcp-meta': JSON.stringify(envelope(TASKS)) } })
    t.same(done, rest.body, store === undefined ? 'memory' : 'redis')
    t.same([done.resultType, done.result.structuredContent], ['complete', { sum: 6 }])
  }
})
