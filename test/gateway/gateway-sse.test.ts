/* eslint-disable no-template-curly-in-string -- `${VAR}` in a config file's strings is part of what is tested */
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, request, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { call, json, legacyJson } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'
import { caps, drain, everythingSse, serveUpstream, until } from '../helpers/gateway-helper.js'
import { post, start } from '../helpers/gateway-cli-helper.js'
import { watchCallers } from '../../src/gateway/connection.js'

interface Seen {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: string
}

/** An HTTP proxy in front of `target` (streaming, so the event stream passes) that notes each request it passes on. */
async function recording(t: Test, target: string): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const upstream = new URL(target)
  const server = createServer((req, res) => {
    const noted = { method: req.method!, path: req.url!, headers: req.headers, body: '' }
    seen.push(noted)
    req.on('data', (chunk: Buffer) => (noted.body += String(chunk)))
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers)
      answer.pipe(res)
    })
    out.on('error', () => res.destroy())
    req.pipe(out)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise((resolve) => server.close(resolve))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`, seen }
}

t.test('server-everything in its HTTP+SSE mode, served over Pure HTTP', async (t) => {
  const upstream = await everythingSse(t)
  const proxy = await recording(t, upstream.url)
  const { app, gw } = await serveUpstream(t, { url: proxy.url, sse: true, headers: { 'x-test': 'yes' } })
  await until(() => gw.mcp.tools.has('trigger-elicitation-request'), 'the conditional tools')
  t.equal(gw.mcp.serverInfo.name, 'mcp-servers/everything', 'serverInfo from the upstream')
  t.equal(gw.modern, false)

  const tools = await call(app, { url: '/tools' })
  t.ok(tools.body.tools.some((x: { name: string }) => x.name === 'echo'), 'tools listed')
  t.ok((await call(app, { url: '/prompts' })).body.prompts.some((x: { name: string }) => x.name === 'args-prompt'), 'prompts listed')
  t.ok((await call(app, { url: '/resources/templates' })).body.resourceTemplates.length > 0, 'templates listed')
  const echo = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'over sse' } }) })
  t.equal(echo.body.content[0].text, 'Echo: over sse')
  const prompt = await call(app, { method: 'POST', url: '/prompts/args-prompt', ...json({ arguments: { city: 'Rome' } }) })
  t.match(prompt.body.messages[0].content.text, /Rome/)
  const text = await call(app, { url: `/resources/${encodeURIComponent('demo://resource/dynamic/text/7')}` })
  t.match(text.body.contents[0].text, /^Resource 7:/)

  // Progress comes on the upstream's event stream, as the answer does.
  const progress = await app.inject({
    method: 'POST',
    url: '/tools/trigger-long-running-operation/calls',
    headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
    payload: { arguments: { duration: 0.2, steps: 2 } }
  })
  t.equal(progress.payload.split('\n\n').filter((e) => e.startsWith('event: notification')).length, 2, 'a progress event per step')
  t.match(progress.payload, /"progress":2,"total":2/)
  t.match(progress.payload, /event: result\ndata: .*Long running operation completed/)

  // An elicitation round: the question comes on the event stream, the answer goes back by POST.
  const meta = caps({ elicitation: {} })
  const first = await call(app, { method: 'POST', url: '/tools/trigger-elicitation-request/calls', ...json({ arguments: {}, _meta: meta }) })
  const key = Object.keys(first.body.inputRequests)[0]!
  t.equal(first.body.inputRequests[key].method, 'elicitation/create')
  const done = await call(app, {
    method: 'POST',
    url: '/tools/trigger-elicitation-request/calls',
    ...json({ arguments: {}, _meta: meta, requestState: first.body.requestState, inputResponses: { [key]: { action: 'cancel' } } })
  })
  t.match(done.body.content[0].text, /cancel/i)

  // A subscription subscribes the upstream; its resources/updated come back on the stream.
  const uri = 'demo://resource/static/document/architecture.md'
  t.equal((await app.inject({ method: 'POST', url: '/resources/subscribe', ...legacyJson({ uri }) })).statusCode, 202)
  await drain(app)
  await call(app, { method: 'POST', url: '/tools/toggle-subscriber-updates/calls', ...json({ arguments: {} }) })
  let updated = false
  await until(async () => (updated ||= (await drain(app)).some((n) => n.method === 'notifications/resources/updated' && n.params?.uri === uri)), 'resources/updated')
  t.ok(updated)
  await call(app, { method: 'POST', url: '/tools/toggle-subscriber-updates/calls', ...json({ arguments: {} }) })

  const viaRpc = await rpc(app, 'tools/call', { name: 'echo', arguments: { message: 'rpc' } })
  t.match(viaRpc.raw, /Echo: rpc/)

  // What went upstream: one event stream, messages to the endpoint it named, each with the configured header.
  const gets = proxy.seen.filter((r) => r.method === 'GET')
  const posts = proxy.seen.filter((r) => r.method === 'POST')
  t.same(gets.map((r) => r.path), ['/sse'], 'one event stream')
  t.ok(posts.length > 5 && posts.every((r) => r.path.startsWith('/message?sessionId=')), 'messages by POST to the endpoint, and nothing else (no 2026-07-28 probe)')
  t.ok([...gets, ...posts].every((r) => r.headers['x-test'] === 'yes'), 'the configured header on the stream and on every message')
})

t.test("forwardAuthorization: the caller's Authorization on the messages sent for it", async (t) => {
  const upstream = await everythingSse(t)
  const proxy = await recording(t, upstream.url)
  const { app } = await serveUpstream(t, { url: proxy.url, sse: true, headers: { authorization: 'Bearer own' }, forwardAuthorization: true })
  watchCallers(app.server)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const echo = async (message: string, headers: Record<string, string>) => {
    const res = await fetch(`${base}/tools/echo/calls`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ arguments: { message } }) })
    t.equal(((await res.json()) as { content: { text: string }[] }).content[0]!.text, `Echo: ${message}`)
  }
  await echo('mine', { authorization: 'Bearer mine' })
  await echo('plain', {})
  // Only the calls: the gateway's own messages (a list fetched again) may come between.
  const calls = proxy.seen.filter((r) => r.body.includes('"tools/call"'))
  t.same(
    calls.map((r) => r.headers.authorization),
    ['Bearer mine', 'Bearer own'],
    "the caller's own, then (a caller without one) the configured one"
  )
  t.equal(proxy.seen[0]!.headers.authorization, 'Bearer own', 'the event stream, opened for no caller: the configured one')
})

t.test('an HTTP+SSE upstream that goes away: its stream tells, calls fail at once, it is connected again when back', async (t) => {
  const upstream = await everythingSse(t)
  // No pings in this test's time: the lost event stream alone must tell.
  const { app, gw } = await serveUpstream(t, { url: upstream.url, sse: true }, { pingIntervalMs: 600_000, restartMinMs: 100, restartMaxMs: 400 })
  const running = call(app, {
    method: 'POST',
    url: '/tools/trigger-long-running-operation/calls',
    ...json({ arguments: { duration: 30, steps: 30 }, _meta: { progressToken: 'p' } })
  })
  // Once the upstream reports progress, the call is running there.
  await until(async () => (await drain(app)).some((n) => n.method === 'notifications/progress'), 'progress')
  upstream.process.kill('SIGKILL')
  await once(upstream.process, 'exit')
  const failed = await running
  t.same([failed.status, failed.body.code], [502, -32603], 'the call in flight fails')
  t.match(failed.body.message, /closed the connection/)
  await until(() => gw.upstream.state === 'down', 'the upstream down')
  const whileDown = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'x' } }) })
  t.equal(whileDown.status, 503)
  t.match(whileDown.headers['retry-after'], /^\d+$/)
  const ready = await app.inject({ url: '/ready' })
  t.equal(ready.statusCode, 503)
  t.match(ready.json().message, /^Not ready: the upstream server upstream is down/)

  await everythingSse(t, upstream.port)
  await until(() => gw.upstream.state === 'up', 'reconnected')
  const echo = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'back' } }) })
  t.equal(echo.body.content[0].text, 'Echo: back')
  t.equal((await app.inject({ url: '/ready' })).statusCode, 200)
})

t.test('gateway --url <url> --sse, and "type": "sse" in a config file', async (t) => {
  const upstream = await everythingSse(t)
  const flag = await start(t, ['gateway', '--url', upstream.url, '--sse'])
  const echo = await post(`${flag.base}/tools/echo/calls`, { arguments: { message: 'flag' } })
  t.equal(echo.body.content[0].text, 'Echo: flag')

  const dir = mkdtempSync(join(tmpdir(), 'gw-sse-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'mcp.json')
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        old: { type: 'sse', url: upstream.url, headers: { 'X-Key': '${TEST_KEY}' } },
        gone: { type: 'sse', url: 'http://127.0.0.1:1/sse', required: false }
      }
    })
  )
  const gw = await start(t, ['gateway', '--config', config], { TEST_KEY: 'k' })
  const root = (await fetch(`${gw.base}/`).then((r) => r.json())) as { servers: { name: string; path: string; state: string; reason?: string; serverInfo: { name: string } }[] }
  t.same(
    root.servers.map((s) => [s.name, s.path, s.state, s.serverInfo.name]),
    [
      ['old', '/old', 'up', 'mcp-servers/everything'],
      ['gone', '/gone', 'down', 'gone']
    ]
  )
  t.match(root.servers[1]!.reason, /SSE error/, 'why it is down')
  const mounted = await post(`${gw.base}/old/tools/echo/calls`, { arguments: { message: 'mounted' } })
  t.equal(mounted.body.content[0].text, 'Echo: mounted')
  t.equal((await fetch(`${gw.base}/ready`)).status, 200, 'the one down is not required')
})
