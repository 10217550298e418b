import t from 'tap'
import { McpServer } from '../../src/core/mcp-server.js'
import { build, call } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'

/**
 * tasks/cancel is a status change like any other: a task created with `notify: true` tells its
 * connection (notifications/tasks, status cancelled), whichever face cancels it; once, however often
 * it is cancelled, and never for a task already finished.
 */
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } }
const meta = { 'io.modelcontextprotocol/clientCapabilities': TASKS }

function server() {
  const mcp = new McpServer({ name: 't', version: '1' })
  // Waits for its cancellation: the task's own end (cancelled, on abort) is then no second notification.
  mcp.tool({ name: 'wait', task: 'required' }, (_args, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))))
  mcp.tool({ name: 'quick', task: 'required' }, async () => 'done')
  return mcp
}

/** The connection's queued notifications, acknowledged (so the next look sees only newer ones). */
async function notes(app: Parameters<typeof call>[0]) {
  const got = await call(app, { url: '/notifications' })
  const group = got.headers['mcp-message-group']
  if (typeof group === 'string') await call(app, { method: 'POST', url: '/notifications', headers: { 'mcp-message-group': group } })
  return got.body as { method: string; params: Record<string, unknown> }[]
}

t.test('Pure HTTP: POST /tasks/{id}/cancel pushes notifications/tasks with status cancelled', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const started = await call(app, { method: 'POST', url: '/tools/wait/calls', payload: { _meta: meta, task: { notify: true } } })
  const taskId = started.body.taskId as string
  t.equal((await call(app, { method: 'POST', url: `/tasks/${taskId}/cancel`, payload: { _meta: meta } })).status, 200)
  t.equal((await call(app, { method: 'POST', url: `/tasks/${taskId}/cancel`, payload: { _meta: meta } })).status, 200, 'again: the same ack')
  const got = await notes(app)
  t.same(got.map((n) => [n.method, n.params.taskId, n.params.status, n.params.statusMessage]), [['notifications/tasks', taskId, 'cancelled', 'Cancelled by the client']])
  t.notOk('notify' in got[0]!.params, 'the wire form (DetailedTask)')
})

t.test('JSON-RPC: tasks/cancel pushes it too; a finished task and one without notify push nothing', async (t) => {
  const { app } = await build(t, { mcp: server() })
  const opts = { caps: TASKS }
  const started = await rpc(app, 'tools/call', { name: 'wait', arguments: {}, task: { notify: true } }, opts)
  const taskId = started.body.result.taskId as string
  const cancel = (id: string) => rpc(app, 'tasks/cancel', { taskId: id }, { ...opts, headers: { 'mcp-name': id } })
  t.same((await cancel(taskId)).body.result, { resultType: 'complete' })
  t.same((await notes(app)).map((n) => [n.method, n.params.taskId, n.params.status]), [['notifications/tasks', taskId, 'cancelled']])

  const quiet = (await rpc(app, 'tools/call', { name: 'wait', arguments: {} }, opts)).body.result.taskId as string
  await cancel(quiet)
  const quick = (await rpc(app, 'tools/call', { name: 'quick', arguments: {}, task: { notify: true } }, opts)).body.result.taskId as string
  const completed = async () => (await rpc(app, 'tasks/get', { taskId: quick }, { ...opts, headers: { 'mcp-name': quick } })).body.result.status
  for (let i = 0; i < 200 && (await completed()) !== 'completed'; i++) await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(await completed(), 'completed')
  await cancel(quick)
  t.same((await notes(app)).map((n) => [n.params.taskId, n.params.status]), [[quick, 'completed']], 'only the completion of the quick one')
})
