import t from 'tap'
import { call, json } from '../helpers/helper.js'
import { drain, everythingStdio, serveUpstream, until } from '../helpers/gateway-helper.js'

t.test('a stdio child killed mid-call: a clear 502, 503 while down, /ready 503, then it is back', async (t) => {
  const { app, gw } = await serveUpstream(t, everythingStdio, { restartMinMs: 1500 })
  const ready = await app.inject({ url: '/ready' })
  t.equal(ready.statusCode, 200)
  const firstPid = gw.upstream.pid!
  t.type(firstPid, 'number')

  const running = call(app, {
    method: 'POST',
    url: '/tools/trigger-long-running-operation/calls',
    ...json({ arguments: { duration: 30, steps: 30 }, _meta: { progressToken: 'p' } })
  })
  // Once the upstream reports progress, the call is running there.
  await until(async () => (await drain(app)).some((n) => n.method === 'notifications/progress'), 'progress')
  process.kill(firstPid, 'SIGKILL')
  const failed = await running
  t.equal(failed.status, 502)
  t.same(failed.body.code, -32603)
  t.match(failed.body.message, /closed the connection/)

  await until(() => gw.upstream.state === 'down', 'the upstream down')
  const whileDown = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'x' } }) })
  t.equal(whileDown.status, 503)
  t.match(whileDown.headers['retry-after'], /^\d+$/)
  t.match(whileDown.body.message, /down/)
  const notReady = await app.inject({ url: '/ready' })
  t.equal(notReady.statusCode, 503)

  await until(() => gw.upstream.state === 'up', 'the restart')
  t.not(gw.upstream.pid, firstPid, 'a new child')
  const after = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'back' } }) })
  t.equal(after.body.content[0].text, 'Echo: back')
  t.equal((await app.inject({ url: '/ready' })).statusCode, 200)
})

t.test('a command that cannot start: failed at once with its reason, not retried; calls 502, /ready 503 naming it', async (t) => {
  const { app, gw } = await serveUpstream(t, { command: process.execPath, args: ['-e', 'console.error("bad flag --x"); process.exit(3)'] }, { restartMinMs: 50, restartMaxMs: 100 })
  t.equal(gw.upstream.state, 'failed')
  t.match(gw.upstream.lastError, /closed.*\(its stderr: bad flag --x\)/i)
  t.equal(gw.mcp.tools.size, 0)
  t.equal(gw.mcp.serverInfo.name, 'upstream', 'named after the configuration until the upstream says')
  const ready = await call(app, { url: '/ready' })
  t.equal(ready.status, 503)
  t.match(ready.body.message, /^Not ready: the upstream server upstream is failed: .*bad flag --x/)
  const missing = await serveUpstream(t, { command: '/nonexistent/mcp-server' })
  t.equal(missing.gw.upstream.state, 'failed')
  t.match(missing.gw.upstream.lastError, /ENOENT/)
  const completion = await missing.gw.upstream.request('completion/complete', {}).catch((err: Error) => err)
  t.match(completion, { status: 502, message: /could not start: spawn \/nonexistent\/mcp-server ENOENT/ }, 'a request: 502 with the reason')
  // No restart: the state stays (several restart delays' worth).
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(gw.upstream.state, 'failed')
})

t.test('an upstream that is not required does not make /ready fail', async (t) => {
  const { app, gw } = await serveUpstream(t, { url: 'http://127.0.0.1:1/mcp' }, { required: false, restartMinMs: 60_000 })
  t.equal(gw.upstream.state, 'down')
  t.equal((await app.inject({ url: '/ready' })).statusCode, 200)
  const res = await call(app, { method: 'POST', url: '/completions', ...json({ ref: { type: 'ref/prompt', name: 'x' }, argument: { name: 'a', value: '' } }) })
  t.equal(res.status, 404, 'nothing listed, nothing to complete')
})

t.test("the caller's cancellation cancels the upstream request", async (t) => {
  const { app, gw } = await serveUpstream(t, everythingStdio)
  const running = call(app, {
    method: 'POST',
    url: '/tools/trigger-long-running-operation/calls',
    headers: { 'mcp-request-id': 'long-1', 'content-type': 'application/json' },
    payload: { arguments: { duration: 60, steps: 60 }, _meta: { progressToken: 'c' } }
  })
  await until(async () => (await drain(app)).some((n) => n.method === 'notifications/progress'), 'progress')
  const sent: unknown[] = []
  const transport = gw.upstream.client!.transport!
  const send = transport.send.bind(transport)
  transport.send = async (message, options) => {
    sent.push(message)
    return send(message, options)
  }
  await app.inject({ method: 'POST', url: '/notifications', payload: [{ method: 'notifications/cancelled', params: { requestId: 'long-1', reason: 'stop' } }] })
  const res = await running
  t.equal(res.body.isError, true)
  t.match(res.body.content[0].text, /^Cancelled: stop/)
  t.match(sent, [{ method: 'notifications/cancelled', params: { reason: /stop/ } }], 'the upstream is told')
})
