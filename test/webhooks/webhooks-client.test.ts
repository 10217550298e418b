import t, { type Test } from 'tap'
import { Webhook } from 'standardwebhooks'
import { PureHttpClient } from '../../src/client/client.js'
import { listenForWebhooks, verifyWebhook } from '../../src/client/webhooks.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'
import { MemoryWebhookStore } from '../../src/webhooks/memory.js'
import { freePort } from '../helpers/redis-server.js'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { cli, run } from '../helpers/cli-run.js'
import { callWithWebhook } from '../../bin/webhook-call.js'

async function serve(t: Test, allowed: string[], gate: Promise<void> = Promise.resolve()) {
  const store = new MemoryWebhookStore()
  const mcp = createDemoServer({ taskStepMs: 30 })
  const delivered = async (n: number) => {
    const [hook] = await store.webhooks('anonymous')
    for (let i = 0; i < 1000 && (await store.attempts(hook!.id)).length < n; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  // Inline (not a task): it reports progress, then answers once the webhook has both deliveries.
  mcp.tool({ name: 'steps' }, async (_args, ctx) => {
    await ctx.progress(1, 2, 'half')
    await ctx.progress(2)
    await delivered(2)
    return 'done'
  })
  // A progress notification without params (no server of ours sends one): the CLI passes it over.
  mcp.tool({ name: 'bare' }, async (_args, ctx) => {
    await mcp.store.mailbox.pushNotification(ctx.principal.id, { method: 'notifications/progress' })
    await delivered(1)
    return 'done'
  })
  mcp.tool({ name: 'oops' }, async () => {
    throw new Error('nope')
  })
  mcp.tool({ name: 'gate', task: 'required' }, async () => {
    await gate
    return 'opened'
  })
  const app = await buildServer({ logger: false, mcp, webhooks: { store, allowedHosts: allowed, pollMs: 20, backoffMs: 5 } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, store }
}

t.test('verifyWebhook accepts what standardwebhooks signs, and refuses what it would refuse', async (t) => {
  const secret = 'whsec_' + Buffer.alloc(32, 7).toString('base64')
  const body = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'
  const now = new Date()
  const signed = new Webhook(secret).sign('msg_1', now, body)
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': `v1,bm9wZQ== ${signed}` }
  t.same(verifyWebhook(secret, headers, body), { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } }, 'one of several signatures matches')
  t.ok(verifyWebhook(secret, new Headers(headers), body), 'fetch Headers')
  t.ok(verifyWebhook(secret.slice(6), { ...headers, 'webhook-id': ['msg_1'] }, body), 'a bare base64 secret, an array header')
  t.throws(() => verifyWebhook(secret, headers, body + ' '), { message: 'No matching webhook-signature' })
  t.throws(() => verifyWebhook(secret, { ...headers, 'webhook-signature': 'v1,short' }, body), { message: 'No matching webhook-signature' })
  t.throws(() => verifyWebhook(secret, { ...headers, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000) - 3600) }, body), { message: /too far from now/ })
  t.throws(() => verifyWebhook(secret, { ...headers, 'webhook-timestamp': 'soon' }, body), { message: /malformed/ })
  t.throws(() => verifyWebhook(secret, { 'webhook-id': 'msg_1' }, body), { message: /^Missing/ })
})

t.test('PureHttpClient registers, lists and deletes; the listener verifies and de-duplicates', async (t) => {
  const heard: any[] = []
  const listener = await listenForWebhooks((n) => heard.push(n))
  t.teardown(() => listener.close())
  const { url } = await serve(t, [new URL(listener.url).host])
  const client = new PureHttpClient({ url })
  const early = await fetch(listener.url, { method: 'POST', body: '{}' })
  t.equal(early.status, 401, 'no secret yet: refused')
  const hook = await client.registerWebhook(listener.url, ['notifications/tasks'])
  t.match(hook, { id: /^wh_/, url: listener.url, events: ['notifications/tasks'], secret: /^whsec_/ })
  listener.secret = hook.secret
  t.same((await client.listWebhooks()).map((h) => h.id), [hook.id])
  const started = await client.callTool('slow_compute', { n: 2 }, { task: { notify: true }, wait: false })
  for (let i = 0; i < 500 && heard.at(-1)?.params.status !== 'completed'; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.same(heard.at(-1).params.result.structuredContent, { sum: 3 })
  t.ok(heard.every((n) => n.method === 'notifications/tasks' && n.params.taskId === (started as { taskId: string }).taskId))
  // The same delivery twice (a retry after a lost answer): handed on once.
  const body = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":9}}'
  const ts = new Date()
  const headers = { 'webhook-id': 'msg_dup', 'webhook-timestamp': String(Math.floor(ts.getTime() / 1000)), 'webhook-signature': new Webhook(hook.secret).sign('msg_dup', ts, body) }
  for (let i = 0; i < 2; i++) t.equal((await fetch(listener.url, { method: 'POST', headers, body })).status, 204)
  t.equal(heard.filter((n) => n.params.progress === 9).length, 1)
  t.equal((await fetch(listener.url, { method: 'POST', headers, body: 'x'.repeat(2 * 1024 * 1024) })).status, 401, 'too large')
  await client.deleteWebhook(hook.id)
  const all = await client.registerWebhook(listener.url)
  t.notOk('events' in all, 'no events: every notification')
  await client.deleteWebhook(all.id)
  t.same(await client.listWebhooks(), [])
})

t.test('mcp-http --webhook: progress and the task outcome arrive pushed; the webhook is deleted on exit', async (t) => {
  const port = await freePort()
  const { url } = await serve(t, [`127.0.0.1:${port}`])
  const task = await run(['--url', url, '--webhook', String(port), 'call', 'slow_compute', '--arg', 'n=2'])
  t.same([task.code, task.stdout], [0, '{"sum":3}\n'])
  t.match(task.stderr, /^task \S+: working\n/)
  t.match(task.stderr, /: completed added 2 of 2\n/, 'deliveries run in parallel: the completion may come before the last progress')
  t.match(task.stderr, /added 2 of 2/)
  const inline = await run(['--url', url, '--webhook', String(port), '--protocol-version', '2025-11-25', 'call', 'echo', '--arg', 'text=hi'])
  t.same([inline.code, inline.stdout], [0, 'hi\n'], 'a call that is not a task answers at once')
  const steps = await run(['--url', url, '--webhook', String(port), 'call', 'steps'])
  t.same([steps.code, steps.stdout, steps.stderr], [0, 'done\n', 'progress 1/2 half\nprogress 2\n'], 'progress of a call that is not a task')
  const bare = await run(['--url', url, '--webhook', String(port), 'call', 'bare'])
  t.same([bare.code, bare.stdout, bare.stderr], [0, 'done\n', ''], 'a notification without params is passed over')
  const oops = await run(['--url', url, '--webhook', String(port), 'call', 'oops'])
  t.same([oops.code, oops.stdout], [1, 'nope\n'], 'a tool result with isError: exit code 1')
  const failed = await run(['--url', url, '--webhook', String(port), 'call', 'failing_job'])
  t.equal(failed.code, 1)
  t.match(failed.stderr, /: failed/)
  t.same(await new PureHttpClient({ url }).listWebhooks(), [], 'every webhook deleted')
  // Cancelled by someone else while the CLI waits: it learns it from the webhook.
  const child = spawn(process.execPath, [cli, '--url', url, '--webhook', String(port), 'call', 'slow_compute', '--arg', 'n=100'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += String(d)))
  for (let i = 0; i < 2000 && !/^task \S+: working\n/.test(stderr); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  await new PureHttpClient({ url }).cancelTask(/^task (\S+):/.exec(stderr)![1]!)
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /mcp-http: Task cancelled: /)
  const bad = await run(['--url', url, '--webhook', 'x', 'call', 'echo'])
  t.same([bad.code, bad.stderr.split('\n')[0]], [2, 'mcp-http: --webhook takes a port, not x'])
  t.equal((await run(['--url', url, '--webhook', '70000', 'call', 'echo'])).code, 2)
})

t.test('callWithWebhook: a webhook disabled mid-call still ends with the outcome, from a slow look at the task', async (t) => {
  const port = await freePort()
  let open = () => {}
  const { url, store } = await serve(t, [`127.0.0.1:${port}`], new Promise<void>((resolve) => (open = resolve)))
  const client = new PureHttpClient({ url })
  let disabled: Promise<unknown> | undefined
  // The looks: the first fails (a network blip), the second finds the task still working (then the
  // gate opens), a later one finds it completed.
  const statuses: string[] = []
  const getTask = client.getTask.bind(client)
  client.getTask = async (...args) => {
    if (statuses.push('look') === 1) throw new Error('blip')
    const task = await getTask(...args)
    statuses.push(task.status)
    if (statuses.length === 3) await disabled!.then(open)
    return task
  }
  const events: string[] = []
  const result = await callWithWebhook(client, 'gate', {}, port, {
    safetyPollMs: 20,
    onEvent: (line) => {
      events.push(line)
      // Disabled before the task ends: its completion is queued on /notifications, not delivered.
      disabled = store.webhooks('anonymous').then(([hook]) => store.settle('anonymous', hook!.id, false, 0, 'disabled by the test'))
    }
  })
  t.same(result.content, [{ type: 'text', text: 'opened' }])
  t.match(events, [/^task \S+: working$/])
  t.equal(events.length, 1, 'the outcome did not come by webhook')
  t.same(statuses.slice(0, 3), ['look', 'look', 'working'])
  t.equal(statuses.at(-1), 'completed')
  t.same(await client.listWebhooks(), [], 'deleted on the way out')
})

t.test('callWithWebhook: an abort cancels the task on the server and rejects with its reason', async (t) => {
  const port = await freePort()
  const { url } = await serve(t, [`127.0.0.1:${port}`])
  const client = new PureHttpClient({ url })
  const ac = new AbortController()
  let taskId = ''
  const call = callWithWebhook(client, 'slow_compute', { n: 100 }, port, {
    signal: ac.signal,
    onEvent: (line) => {
      const started = /^task (\S+): working$/.exec(line)
      if (started === null || taskId !== '') return
      taskId = started[1]!
      ac.abort(new Error('interrupted'))
    }
  })
  await t.rejects(call, { message: 'interrupted' })
  t.match(await client.getTask(taskId), { status: 'cancelled' })
  t.same(await client.listWebhooks(), [], 'deleted on the way out')
})
