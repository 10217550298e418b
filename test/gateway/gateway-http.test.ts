import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { call, json } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'
import { FILESYSTEM, caps, everythingHttp, serveUpstream, until } from '../helpers/gateway-helper.js'

t.test('server-everything in its Streamable HTTP mode, served over Pure HTTP', async (t) => {
  const upstream = await everythingHttp(t)
  const { app, gw } = await serveUpstream(t, { url: upstream.url, headers: { 'x-test': 'yes' } })
  await until(() => gw.mcp.tools.has('trigger-elicitation-request'), 'the conditional tools')
  t.equal(gw.mcp.serverInfo.name, 'mcp-servers/everything', 'serverInfo from the upstream')
  t.match(gw.mcp.instructions, /\w/, 'instructions from the upstream')

  const echo = await call(app, { method: 'POST', url: '/tools/echo/calls', ...json({ arguments: { message: 'over http' } }) })
  t.equal(echo.body.content[0].text, 'Echo: over http')
  const sum = await call(app, { method: 'POST', url: '/tools/get-sum/calls', ...json({ arguments: { a: 1, b: 2 } }) })
  t.match(sum.body.content[0].text, /3/)
  const prompt = await call(app, { method: 'POST', url: '/prompts/args-prompt', ...json({ arguments: { city: 'Rome' } }) })
  t.match(prompt.body.messages[0].content.text, /Rome/)
  const text = await call(app, { url: `/resources/${encodeURIComponent('demo://resource/dynamic/text/7')}` })
  t.match(text.body.contents[0].text, /^Resource 7:/)

  // An elicitation round over the upstream's SSE stream: the answer goes back by POST.
  const meta = caps({ elicitation: {} })
  const first = await call(app, { method: 'POST', url: '/tools/trigger-elicitation-request/calls', ...json({ arguments: {}, _meta: meta }) })
  const key = Object.keys(first.body.inputRequests)[0]!
  const done = await call(app, {
    method: 'POST',
    url: '/tools/trigger-elicitation-request/calls',
    ...json({ arguments: {}, _meta: meta, requestState: first.body.requestState, inputResponses: { [key]: { action: 'cancel' } } })
  })
  t.match(done.body.content[0].text, /cancel/i)

  // The Streamable HTTP face of this gateway, too: the same upstream through /mcp.
  const viaRpc = await rpc(app, 'tools/call', { name: 'echo', arguments: { message: 'rpc' } })
  t.match(viaRpc.raw, /Echo: rpc/)
})

t.test('server-filesystem on a temporary directory', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-fs-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'hello.txt'), 'hello from disk\n')
  // Its allowed directory is `.`, the upstream's working directory: the temporary one only if `cwd` is honoured.
  const { app, gw } = await serveUpstream(t, { command: process.execPath, args: [FILESYSTEM, '.'], cwd: dir })
  t.ok(gw.mcp.tools.has('read_text_file'))
  const read = await call(app, { method: 'POST', url: '/tools/read_text_file/calls', ...json({ arguments: { path: join(dir, 'hello.txt') } }) })
  t.match(read.body.content[0].text, 'hello from disk')
  const write = await call(app, { method: 'POST', url: '/tools/write_file/calls', ...json({ arguments: { path: join(dir, 'new.txt'), content: 'written through the gateway' } }) })
  t.notOk(write.body.isError)
  t.equal(readFileSync(join(dir, 'new.txt'), 'utf8'), 'written through the gateway')
  const outside = await call(app, { method: 'POST', url: '/tools/read_text_file/calls', ...json({ arguments: { path: '/etc/hostname' } }) })
  t.equal(outside.body.isError, true, "the upstream's own refusal is the tool's error")
  const list = await call(app, { method: 'POST', url: '/tools/list_directory/calls', ...json({ arguments: { path: dir } }) })
  t.match(list.body.content[0].text, /hello\.txt[\s\S]*new\.txt|new\.txt[\s\S]*hello\.txt/)
})
