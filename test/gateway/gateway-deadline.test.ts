import t from 'tap'
import { call, json } from '../helpers/helper.js'
import { serveUpstream } from '../helpers/gateway-helper.js'
import { hostileUpstream } from '../helpers/gateway-hostile.js'

t.test('an upstream request silent past its deadline is 504 in our error shape, and the upstream is told', async (t) => {
  const { app } = await serveUpstream(t, hostileUpstream, { requestTimeoutMs: 2000 })
  const tool = (name: string) => call(app, { method: 'POST', url: `/tools/${name}/calls`, ...json({ arguments: {} }) })
  const late = { code: -32603, message: 'The upstream server upstream did not answer in time (nothing from it for 2 s)' }
  for (const name of ['cut', 'wrong-id', 'silent']) {
    const res = await tool(name)
    t.same([res.status, res.body], [504, late], `${name}: 504 at the deadline`)
  }
  const told = await tool('cancelled')
  t.equal(JSON.parse(told.body.content[0].text).length, 3, 'each given-up request cancelled upstream')
  // Progress is a sign of life: 3 s of reports every 250 ms outlast a 2 s deadline.
  const chatty = await tool('chatty')
  t.same([chatty.status, chatty.body.content], [200, [{ type: 'text', text: 'done after 12 reports' }]])
  t.equal((await tool('ok')).body.content[0].text, 'ok', 'the connection still serves')
})

t.test('no deadline with 0; the one over /mcp is the same', async (t) => {
  const { app } = await serveUpstream(t, hostileUpstream, { requestTimeoutMs: 0 })
  const running = call(app, { method: 'POST', url: '/tools/silent/calls', headers: { 'mcp-request-id': 'forever', 'content-type': 'application/json' }, payload: { arguments: {} } })
  let settled = false
  void running.then(() => (settled = true))
  // The chatty call ends after 3 s; the silent one, started first, is still waiting then.
  t.equal((await call(app, { method: 'POST', url: '/tools/chatty/calls', ...json({ arguments: {} }) })).status, 200)
  t.equal(settled, false, 'still waiting without a deadline')
  await app.inject({ method: 'POST', url: '/notifications', payload: [{ method: 'notifications/cancelled', params: { requestId: 'forever', reason: 'enough' } }] })
  const res = await running
  t.equal(res.body.isError, true, 'ended by its caller')
  const rpc = await serveUpstream(t, hostileUpstream, { requestTimeoutMs: 1000 })
  const viaMcp = await call(rpc.app, {
    method: 'POST',
    url: '/mcp',
    headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', 'content-type': 'application/json' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'cut', arguments: {} } }
  })
  t.same(viaMcp.body.error, { code: -32603, message: 'The upstream server upstream did not answer in time (nothing from it for 1 s)' })
})
