import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { EVERYTHING, FILESYSTEM } from '../helpers/gateway-helper.js'
import { start } from '../helpers/gateway-cli-helper.js'

// One endpoint over several upstreams: a virtual server of the config file, served by the real
// command over server-everything (twice, so that names clash) and server-filesystem.

const ALICE = 'alice-key-0123456789abcdefghijklmnopqrstuv'
const BOB = 'bob-key-0123456789abcdefghijklmnopqrstuvwxy'

t.test('virtualServers: picked, renamed, described, scoped entries of several upstreams under one mount', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-virtual-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'note.txt'), 'a note for the team')
  const config = join(dir, 'mcp.json')
  const everything = { command: process.execPath, args: [EVERYTHING, 'stdio'] }
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        everything,
        other: { ...everything, mount: false },
        files: { command: process.execPath, args: [FILESYSTEM, dir], mount: false }
      },
      virtualServers: {
        team: {
          include: ['everything/echo', 'everything/get-sum', 'other/get-sum', 'everything/toggle-subscriber-updates', 'everything/simple-prompt', 'everything/demo://resource/static/*', 'files/*'],
          exclude: ['files/write_file', 'files/edit_file', 'files/move_file', 'files/create_directory'],
          rename: { 'everything/echo': 'say' },
          descriptions: { 'files/read_text_file': 'Read a note of the team' },
          scopes: { 'files/list_*': ['files:list'] }
        }
      }
    })
  )
  const gw = await start(t, ['gateway', '--config', config], { MCP_API_KEYS: `alice:${ALICE}:files:list,bob:${BOB}` })
  const as = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })
  // Bodies as `any`: they are the upstreams' answers, checked field by field below.
  interface Answer {
    status: number
    headers: Headers
    json(): Promise<any>
  }
  const get = (path: string, key = ALICE): Promise<Answer> => fetch(`${gw.base}${path}`, { headers: as(key) })
  const post = (path: string, body: unknown, key = ALICE): Promise<Answer> =>
    fetch(`${gw.base}${path}`, { method: 'POST', headers: as(key), body: JSON.stringify(body) })

  const root = (await (await get('/')).json()) as { servers: { name: string; path?: string }[]; virtualServers: Record<string, unknown>[] }
  t.same(root.servers.map((s) => [s.name, s.path]), [['everything', '/everything'], ['other', undefined], ['files', undefined]], 'a source with "mount": false has no path')
  t.match(root.virtualServers, [{ name: 'team', path: '/team', servers: ['everything', 'other', 'files'], state: 'up' }])

  const tools = ((await (await get('/team/tools')).json()) as { tools: { name: string; description?: string }[] }).tools
  const names = tools.map((x) => x.name)
  t.ok(names.includes('say') && !names.includes('echo'), 'renamed')
  t.ok(names.includes('everything_get-sum') && names.includes('other_get-sum') && !names.includes('get-sum'), 'names that clash take their server as a prefix')
  t.ok(names.includes('list_directory') && !names.includes('write_file') && !names.includes('get-env'), 'included, excluded, not included')
  t.equal(tools.find((x) => x.name === 'read_text_file')?.description, 'Read a note of the team', 'description overridden')

  const say = await (await post('/team/tools/say/calls', { arguments: { message: 'team' } })).json()
  t.equal(say.content[0].text, 'Echo: team', "called under the upstream's own name")
  const sum = await (await post('/team/tools/other_get-sum/calls', { arguments: { a: 2, b: 3 } })).json()
  t.match(sum.content[0].text, /5/)
  const note = await (await post('/team/tools/read_text_file/calls', { arguments: { path: join(dir, 'note.txt') } })).json()
  t.equal(note.content[0].text, 'a note for the team')
  const excluded = await post('/team/tools/write_file/calls', { arguments: { path: join(dir, 'x'), content: 'x' } })
  t.equal(excluded.status, 404, 'an excluded tool is not there, nor forwarded')
  t.equal((await get('/files/tools')).status, 404, 'nor is its upstream served on its own')

  const listed = await post('/team/tools/list_directory/calls', { arguments: { path: dir } })
  t.equal(listed.status, 200, "the key's scopes cover the tool's")
  const refused = await post('/team/tools/list_directory/calls', { arguments: { path: dir } }, BOB)
  t.same([refused.status, ((await refused.json()) as { message: string }).message], [403, 'Insufficient scope: tool list_directory requires files:list'], 'a principal without the scope')

  const prompt = await (await get('/team/prompts/simple-prompt')).json()
  t.match(prompt.messages[0].content.text, /simple prompt/i)
  const uri = 'demo://resource/static/document/architecture.md'
  const resources = ((await (await get('/team/resources')).json()) as { resources: { uri: string }[] }).resources.map((r) => r.uri)
  t.ok(resources.includes(uri) && resources.every((r) => r.startsWith('demo://resource/static/')), 'resources by URI pattern')
  t.match((await (await get(`/team/resources/${encodeURIComponent(uri)}`)).json()).contents[0].text, /\w/)

  // A subscription through the virtual server subscribes the upstream that serves the URI, and its
  // updates reach the virtual server's subscribers.
  const subscribed = await fetch(`${gw.base}/team/resources/subscribe`, { method: 'POST', headers: { ...as(ALICE), 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ uri }) })
  t.equal(subscribed.status, 202, 'by a 2025-11-25 client: 2026-07-28 has subscriptions/listen instead')
  await post('/team/tools/toggle-subscriber-updates/calls', { arguments: {} })
  let heard: { method: string; params?: { uri?: string } }[] = []
  for (let i = 0; i < 1000 && !heard.some((n) => n.method === 'notifications/resources/updated'); i++) {
    const res = await get('/team/notifications')
    const group = res.headers.get('mcp-message-group')
    heard = heard.concat((await res.json()) as typeof heard)
    if (group !== null) await fetch(`${gw.base}/team/notifications`, { method: 'POST', headers: { authorization: `Bearer ${ALICE}`, 'mcp-message-group': group } })
    else await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.match(heard.find((n) => n.method === 'notifications/resources/updated'), { params: { uri } })
  await post('/team/tools/toggle-subscriber-updates/calls', { arguments: {} })

  const doc = (await (await get('/team/openapi.json')).json()) as { paths: Record<string, unknown> }
  t.ok(doc.paths['/team/tools/say/calls'] && !doc.paths['/team/tools/write_file/calls'], 'its own OpenAPI document')
  const rpc = await post('/team/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })
  t.same(((await rpc.json()) as { result: { tools: { name: string }[] } }).result.tools.map((x) => x.name).sort(), [...names].sort(), 'and /mcp lists the same')
})

t.test('a virtual server in process: names from a template, templates and completions, tasks of its own, clashes left out', async (t) => {
  const { Gateway } = await import('../../src/gateway/gateway.js')
  const { VirtualServer } = await import('../../src/gateway/virtual.js')
  const { gatewayStore } = await import('../../src/gateway/store.js')
  const { MemoryRelay } = await import('../../src/gateway/relay.js')
  const { MemoryStore } = await import('../../src/store/memory.js')
  const { buildServer } = await import('../../src/server.js')
  const { call, json, legacyJson } = await import('../helpers/helper.js')
  const { caps, everythingStdio, until } = await import('../helpers/gateway-helper.js')
  const warned: Record<string, unknown>[] = []
  const log = { debug() {}, info() {}, warn: (o: unknown) => void warned.push(o as Record<string, unknown>), error() {} }
  const relay = new MemoryRelay()
  const open = (name: string, spec: typeof everythingStdio) => Gateway.start({ name, spec, log, server: {}, relay, instance: `v-${name}`, taskAfterMs: 0, required: false })
  const [one, two, down] = await Promise.all([open('one', everythingStdio), open('two', everythingStdio), open('down', { url: 'http://127.0.0.1:1/mcp' })])
  t.teardown(() => Promise.all([one, two, down].map((g) => g.close())))
  const make = (spec: Partial<import('../../src/gateway/options.js').VirtualSpec>, sources = [one, two, down]) =>
    new VirtualServer({ name: 'v', prefix: '/v', include: [], exclude: [], rename: {}, names: undefined, descriptions: {}, scopes: {}, ...spec }, sources, {}, log)

  const nobody = make({ include: ['down/*'] }, [down])
  t.same(nobody.mcp.capabilities().prompts, { listChanged: true }, 'no upstream connected yet: everything offered, as a gateway does')

  const vs = make({
    include: ['one/echo', 'two/echo', 'one/completable-prompt', 'one/demo://resource/dynamic/*', 'one/trigger-long-running-operation'],
    names: '{server}.{name}',
    rename: { 'one/echo': 'same', 'two/echo': 'same' }
  })
  t.same([...vs.mcp.tools.keys()].sort(), ['one.trigger-long-running-operation', 'same'], "names from the template; a rename's clash keeps the first")
  t.match(warned.filter((w) => w.virtual !== undefined), [{ virtual: 'v', key: 'two/echo' }], 'and says which entry it left out')
  t.same([...vs.mcp.prompts.keys()], ['one.completable-prompt'])
  vs.sync('tools')
  t.same([...vs.mcp.tools.keys()].sort(), ['one.trigger-long-running-operation', 'same'], 'picked again (an upstream list changed): the same')
  t.same(vs.mcp.capabilities().logging, {}, 'the capabilities any of its upstreams offers')

  const store = new MemoryStore()
  const app = await buildServer({ logger: false, mcp: vs.mcp, store: gatewayStore(store, { mcp: vs.mcp, holder: 'v', upstreamOf: (uri) => vs.upstreamOf(uri) }, [one, two], log) })
  t.teardown(() => app.close())
  await app.ready()
  const completed = await call(app, {
    method: 'POST',
    url: '/completions',
    ...json({ ref: { type: 'ref/prompt', name: 'one.completable-prompt' }, argument: { name: 'department', value: 'E' } })
  })
  t.match(completed.body.completion.values, ['Engineering'], "completion asked of the upstream under the prompt's own name")
  const template = 'demo://resource/dynamic/text/{resourceId}'
  t.equal(vs.upstreamOf('demo://resource/dynamic/text/3'), one, 'a URI of a template: its upstream')
  t.equal(vs.upstreamOf('demo://elsewhere'), undefined)
  t.ok(vs.mcp.templates.has(template))
  const read = await call(app, { url: `/resources/${encodeURIComponent('demo://resource/dynamic/text/3')}` })
  t.match(read.body.contents[0].text, /Resource 3/)
  // Unsubscribing what nobody subscribed, and a URI no upstream serves: nothing to release.
  t.equal((await call(app, { method: 'POST', url: '/resources/unsubscribe', ...legacyJson({ uri: 'demo://elsewhere' }) })).status, 202)

  // An update of a URI the virtual server does not serve reaches the upstream's own mount alone.
  const updated: string[] = []
  const ownUpdate = one.mcp.resourceUpdated.bind(one.mcp)
  one.mcp.resourceUpdated = async (uri) => {
    updated.push(`one ${uri}`)
    return ownUpdate(uri)
  }
  vs.mcp.resourceUpdated = async (uri) => void updated.push(`v ${uri}`)
  const staticUri = 'demo://resource/static/document/architecture.md'
  await one.subscribeUpstream(staticUri, 'elsewhere')
  await one.upstream.request('tools/call', { name: 'toggle-subscriber-updates', arguments: {} })
  await until(() => updated.length > 0, 'an update')
  await one.upstream.request('tools/call', { name: 'toggle-subscriber-updates', arguments: {} })
  t.same(updated, [`one ${staticUri}`], 'not to the virtual server')
  // Releasing: what nobody held, and what was held where the upstream offers no subscriptions, asks nothing upstream.
  const asked: string[] = []
  for (const gw of [one, down]) {
    const request = gw.upstream.request.bind(gw.upstream)
    gw.upstream.request = async (method, params, options) => {
      asked.push(method)
      return request(method, params, options)
    }
  }
  await one.unsubscribeUpstream('demo://never-subscribed', 0, 'v')
  await down.subscribeUpstream('x:held', 'v')
  await down.unsubscribeUpstream('x:held', 0, 'v')
  t.same(asked, [], 'nothing asked upstream')
  await one.unsubscribeUpstream(staticUri, 0, 'elsewhere')
  t.same(asked, ['resources/unsubscribe'], 'the last holder of a subscribed URI unsubscribes it')

  const TASKS = caps({ extensions: { 'io.modelcontextprotocol/tasks': {} } })
  const created = await call(app, { method: 'POST', url: '/tools/one.trigger-long-running-operation/calls', ...json({ arguments: { duration: 1, steps: 2 }, _meta: TASKS }) })
  t.equal(created.status, 202, 'a call that goes on becomes a task...')
  let task: { status: string } = { status: '' }
  await until(async () => (task = (await call(app, { url: `/tasks/${created.body.taskId}`, headers: { 'mcp-meta': JSON.stringify(TASKS) } })).body).status === 'completed', 'the task done')
  t.equal(task.status, 'completed', "...of the virtual server's own, polled on it")
})
