import { createServer } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { call, json } from '../helpers/helper.js'
import { everythingHttp, serveUpstream, until } from '../helpers/gateway-helper.js'
import { post, start } from '../helpers/gateway-cli-helper.js'
import { watchCallers } from '../../src/gateway/connection.js'

/** A stateless Streamable HTTP upstream (the SDK's) whose `whoami` tool says which Authorization it got. */
async function whoUpstream(t: Test, heard: (string | undefined)[] = []): Promise<string> {
  const server = createServer((req, res) => {
    heard.push(req.headers.authorization)
    const mcp = new McpServer({ name: 'who', version: '1' })
    mcp.registerTool('whoami', { description: 'the Authorization header of this request' }, async (extra) => ({
      content: [{ type: 'text', text: String(extra.requestInfo?.headers.authorization ?? 'none') }]
    }))
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    void mcp.connect(transport).then(() => transport.handleRequest(req, res))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
}

t.test("the client's Authorization goes upstream only when the configuration says so", async (t) => {
  const url = await whoUpstream(t)
  const plain = await start(t, ['gateway', '--url', url, '--header', 'Authorization: Bearer gateway-own'])
  const forwarding = await start(t, ['gateway', '--url', url, '--forward-authorization'])
  const whoami = (base: string, authorization?: string) =>
    fetch(`${base}/tools/whoami/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
      body: JSON.stringify({ arguments: {} })
    }).then(async (r) => ((await r.json()) as { content: { text: string }[] }).content[0]!.text)
  t.equal(await whoami(plain.base, 'Bearer client-token'), 'Bearer gateway-own', 'not forwarded: the configured header')
  t.equal(await whoami(forwarding.base, 'Bearer client-token'), 'Bearer client-token', 'forwarded when configured')
  t.equal(await whoami(forwarding.base), 'none', 'a request without one sends none (nothing left from the last)')
  t.equal((await post(`${forwarding.base}/tools/whoami/calls`, { arguments: {} })).status, 200)
})

t.test('a DPoP-bound token is not forwarded: 403 naming the upstream, and the upstream hears nothing of it', async (t) => {
  const heard: (string | undefined)[] = []
  const url = await whoUpstream(t, heard)
  const forwarding = await start(t, ['gateway', '--url', url, '--forward-authorization'])
  const res = await fetch(`${forwarding.base}/tools/whoami/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'DPoP bound-token', dpop: 'a proof for the gateway' },
    body: JSON.stringify({ arguments: {} })
  })
  t.equal(res.status, 403)
  const body = (await res.json()) as { code: number; message: string; data: { upstream: string } }
  t.equal(body.code, -32600)
  t.match(body.message, /^The upstream server \S+ is sent the caller's own token, and a DPoP-bound token cannot be forwarded/)
  t.type(body.data.upstream, 'string')
  t.ok(body.message.includes(body.data.upstream), 'the message names the upstream of data.upstream')
  t.notOk(heard.some((h) => h?.includes('bound-token')), 'the upstream never received the bound token')
  // The same gateway still forwards a Bearer token.
  const bearer = await fetch(`${forwarding.base}/tools/whoami/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer plain' },
    body: JSON.stringify({ arguments: {} })
  })
  t.equal(((await bearer.json()) as { content: { text: string }[] }).content[0]!.text, 'Bearer plain')
})

t.test('forwarding in this process: the Authorization of the request that made the upstream call', async (t) => {
  const url = await whoUpstream(t)
  const { app } = await serveUpstream(t, { url, headers: { authorization: 'Bearer own' }, forwardAuthorization: true })
  watchCallers(app.server)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const whoami = (headers: Record<string, string>) =>
    post2(`${base}/tools/whoami/calls`, headers).then((b) => b.content[0]!.text)
  t.equal(await whoami({ authorization: 'Bearer mine' }), 'Bearer mine')
  t.equal(await whoami({}), 'Bearer own', 'without one: the configured header')
})

t.test('a refused forward is the caller\'s answer, not logged as an upstream message dropped', async (t) => {
  const url = await whoUpstream(t)
  const said: [string, string][] = []
  const at = (level: string) => (_o: unknown, msg: string) => void said.push([level, msg])
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
  const { app } = await serveUpstream(t, { url, forwardAuthorization: true }, { log: log as never })
  watchCallers(app.server)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const res = await fetch(`${base}/tools/whoami/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'DPoP bound-token', dpop: 'a proof for the gateway' },
    body: JSON.stringify({ arguments: {} })
  })
  t.equal(res.status, 403)
  t.equal(((await res.json()) as { code: number }).code, -32600)
  t.equal(await post2(`${base}/tools/whoami/calls`, { authorization: 'Bearer plain' }).then((b) => b.content[0]!.text), 'Bearer plain', 'the connection still works')
  t.same(said.filter(([, msg]) => msg === 'upstream message dropped'), [], 'nothing said of a message dropped')
})

const post2 = (url: string, headers: Record<string, string>) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ arguments: {} }) }).then(
    async (r) => (await r.json()) as { content: { text: string }[] }
  )

t.test('a Streamable HTTP upstream that stops answering: calls fail at once, not hang; it comes back', async (t) => {
  const upstream = await everythingHttp(t)
  const { app, gw } = await serveUpstream(t, { url: upstream.url }, { pingIntervalMs: 300, pingTimeoutMs: 4000, connectTimeoutMs: 4000, restartMinMs: 100, restartMaxMs: 400 })
  t.teardown(() => void upstream.process.kill('SIGCONT'))
  const running = call(app, { method: 'POST', url: '/tools/trigger-long-running-operation/calls', ...json({ arguments: { duration: 30, steps: 30 } }) })
  let ended: unknown
  void running.then((r) => (ended = r.body))
  await until(() => ended !== undefined || gw.rounds.callers().length === 1, 'the call upstream')
  t.equal(JSON.stringify(ended), undefined, 'running upstream')
  // Stopped, not killed: its socket stays open and nothing answers (a hung server).
  upstream.process.kill('SIGSTOP')
  const failed = await running
  t.same([failed.status, failed.body.code], [502, -32603])
  t.match(failed.body.message, /closed the connection/)
  await until(() => gw.upstream.state !== 'up', 'the upstream taken for dead')
  const whileDown = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'x' } }) })
  t.equal(whileDown.status, 503)
  t.match(whileDown.headers['retry-after'], /^\d+$/)
  t.equal((await app.inject({ url: '/ready' })).statusCode, 503)
  upstream.process.kill('SIGCONT')
  await until(() => gw.upstream.state === 'up', 'reconnected')
  const echo = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'back' } }) })
  t.equal(echo.body.content[0].text, 'Echo: back')
  t.equal((await app.inject({ url: '/ready' })).statusCode, 200)
})

t.test("a list_changed on a caller's answer stream: the lists are fetched again as the gateway, not as that caller", async (t) => {
  // A stateless upstream whose `announce` says list_changed on the answer stream of the call, and
  // which records the Authorization of every tools/list.
  const listedBy: string[] = []
  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString()) as { method?: string })
      if (body?.method === 'tools/list') listedBy.push(String(req.headers.authorization ?? 'none'))
      const mcp = new McpServer({ name: 'announcer', version: '1' }, { capabilities: { tools: { listChanged: true } } })
      mcp.registerTool('announce', { description: 'says list_changed during the call' }, async (extra) => {
        await extra.sendNotification({ method: 'notifications/tools/list_changed' })
        return { content: [{ type: 'text', text: 'announced' }] }
      })
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
      await mcp.connect(transport)
      await transport.handleRequest(req, res, body)
    })()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
  const { app } = await serveUpstream(t, { url, headers: { authorization: 'Bearer own' }, forwardAuthorization: true })
  watchCallers(app.server)
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.same(listedBy, ['Bearer own'], 'listed at start with its own header')
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const answer = await fetch(`${base}/tools/announce/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer mine' },
    body: JSON.stringify({ arguments: {} })
  }).then(async (r) => (await r.json()) as { content: { text: string }[] })
  t.equal(answer.content[0]!.text, 'announced')
  await until(() => listedBy.length > 1, 'the lists fetched again')
  t.same(listedBy, ['Bearer own', 'Bearer own'], "the second time too: the caller's token is for its own calls")
})
