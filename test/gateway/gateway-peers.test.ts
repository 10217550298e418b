import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { CODE_RUNNER, DESKTOP_COMMANDER, MEMORY, SEQUENTIAL_THINKING } from '../tools/paths.js'
import { call } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'
import { direct, serveUpstream, until } from '../helpers/gateway-helper.js'

// More of the servers issue #41 tried, each called directly (the official SDK's client over stdio)
// and through the gateway on both faces: the same capabilities, tools and answers, as the same JSON
// (key order included) wherever the protocol leaves nothing to the gateway.

type Spec = { command: string; args: string[]; env?: Record<string, string> }
type Json = Record<string, unknown>

interface Options {
  /** What differs between two runs of the server itself (a process id, a clock), blanked on both sides. */
  mask?: (answer: Json) => Json
}

const LISTS = new Set(['tools', 'prompts', 'resources'])

/** Each call's answer directly, and on REST and on /mcp (2025-11-25): results, `isError` results, errors. */
async function compare(t: Test, own: Spec, through: Spec, calls: [string, Record<string, unknown>][], { mask = (a) => a }: Options = {}) {
  const mine = await direct(t, own)
  const { app } = await serveUpstream(t, through)
  const legacy = { 'mcp-protocol-version': '2025-11-25' }
  const init = (await rpc(app, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy' })).body.result
  const { extensions: _extensions, ...caps } = init.capabilities
  // Each list is this gateway's own, fetched again whenever the upstream connects anew (a restart
  // may bring other tools), so it says listChanged where the upstream may not.
  const theirs = Object.entries(mine.client.getServerCapabilities()!).map(([k, v]) => [k, LISTS.has(k) ? { ...(v as Json), listChanged: true } : v])
  t.same(caps, Object.fromEntries(theirs), 'the same capabilities, listChanged added to the lists')
  // `execution` is the upstream's own task support: the gateway never asks the upstream for a task
  // (it makes its own after taskAfterMs, as for every tool here) and so does not pass it on.
  // code-runner's "forbidden" means what its absence means (2025-11-25: absent is forbidden).
  // A tool's own fields come in this library's order (name, title, description, inputSchema,
  // outputSchema, annotations, icons, _meta), not the upstream's: JSON gives an object's members no
  // order, and none of MCP's messages do. Everything inside them (the schemas) is as sent.
  const ordered = (tools: Json[]) => JSON.stringify(tools.map((tool) => Object.fromEntries(Object.entries(tool).sort(([a], [b]) => (a < b ? -1 : 1)))))
  const listed = (await mine.wire(() => mine.client.listTools())).tools as Json[]
  const tools = ordered(listed.map(({ execution: _e, ...tool }) => tool))
  t.equal(ordered((await call(app, { url: '/tools', headers: legacy })).body.tools), tools, 'the same tools: names, schemas, annotations, _meta (REST)')
  t.equal(ordered((await rpc(app, 'tools/list', {}, { era: 'legacy' })).body.result.tools), tools, 'the same tools on /mcp (2025-11-25)')
  t.equal(ordered((await rpc(app, 'tools/list', {}, { era: 'modern' })).body.result.tools), tools, 'the same tools on /mcp (2026-07-28)')
  // Each call made twice on each side (REST, then /mcp), so that stateful servers stay in step.
  for (const [name, args] of calls) {
    let expected = JSON.stringify(mask(await mine.callTool(name, args)))
    const rest = await call(app, { method: 'POST', url: `/tools/${name}/calls`, headers: { ...legacy, 'content-type': 'application/json' }, payload: JSON.stringify({ arguments: args }) })
    const body = rest.body.code === undefined ? rest.body : { error: { code: rest.body.code, message: rest.body.message } }
    t.equal(JSON.stringify(mask(body)), expected, `${name} ${JSON.stringify(args)} on REST`)
    expected = JSON.stringify(mask(await mine.callTool(name, args)))
    const res = await rpc(app, 'tools/call', { name, arguments: args }, { era: 'legacy' })
    t.equal(JSON.stringify(mask(res.body.result ?? { error: res.body.error })), expected, `${name} ${JSON.stringify(args)} on /mcp`)
  }
  return { mine, app }
}

t.test('server-sequential-thinking: its own judgment of its arguments, a string where it wants a number included', async (t) => {
  const spec = { command: process.execPath, args: [SEQUENTIAL_THINKING], env: { DISABLE_THOUGHT_LOGGING: 'true' } }
  await compare(t, spec, spec, [
    ['sequentialthinking', { thought: 'first', thoughtNumber: 1, totalThoughts: 2, nextThoughtNeeded: true }],
    ['sequentialthinking', { thought: 'typed loosely', thoughtNumber: '3', totalThoughts: 3, nextThoughtNeeded: false }],
    ['sequentialthinking', { thought: 'missing the rest' }],
    ['nope', {}]
  ])
})

t.test('server-memory: entities and relations created, read, searched, deleted, through the gateway as directly', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-memory-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // Each server its own file, both starting empty: the same calls must give the same answers.
  const spec = (file: string) => ({ command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, file) } })
  await compare(t, spec('direct.jsonl'), spec('gateway.jsonl'), [
    ['create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }, { name: 'Engine', entityType: 'machine', observations: [] }] }],
    ['create_relations', { relations: [{ from: 'Ada', to: 'Engine', relationType: 'programmed' }] }],
    ['add_observations', { observations: [{ entityName: 'Ada', contents: ['born 1815'] }] }],
    ['search_nodes', { query: 'Ada' }],
    ['open_nodes', { names: ['Engine', 'Nobody'] }],
    ['read_graph', {}],
    ['delete_entities', { entityNames: ['Engine'] }],
    ['read_graph', {}],
    ['create_entities', { entities: 'not a list' }]
  ])
})

type Mine = Awaited<ReturnType<typeof direct>>

/** Lists besides tools (prompts, resources, templates), directly and on both faces: the same entries, or the same error. */
async function otherLists(t: Test, mine: Mine, app: Awaited<ReturnType<typeof serveUpstream>>['app']) {
  const lists: [string, string, string, () => Promise<Json>][] = [
    ['prompts/list', 'prompts', '/prompts', () => mine.client.listPrompts()],
    ['resources/list', 'resources', '/resources', () => mine.client.listResources()],
    ['resources/templates/list', 'resourceTemplates', '/resources/templates', () => mine.client.listResourceTemplates()]
  ]
  for (const [method, key, url, directly] of lists) {
    const answer = await mine.wire(directly)
    const expected = JSON.stringify(answer.error ?? answer[key])
    const rest = await call(app, { url, headers: { 'mcp-protocol-version': '2025-11-25' } })
    t.equal(JSON.stringify(rest.status === 200 ? rest.body[key] : rest.body), expected, `${method} on REST`)
    const res = (await rpc(app, method, {}, { era: 'legacy' })).body
    t.equal(JSON.stringify(res.result?.[key] ?? res.error), expected, `${method} on /mcp`)
  }
}

/** The processes still running with `HOME` set to `home`: a server started with it, and whatever it started. */
function survivors(home: string): number[] {
  const found: number[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`HOME=${home}`)) found.push(Number(pid))
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found
}

/** A HOME (and TMPDIR) of its own for one server, and, once `run` is done and all closed, no process left with it. */
async function isolated(t: Test, name: string, run: (t: Test, env: () => Record<string, string>) => Promise<void>) {
  const homes: string[] = []
  const env = () => {
    const home = mkdtempSync(join(tmpdir(), 'gw-home-'))
    homes.push(home)
    return { HOME: home, TMPDIR: home, DESKTOP_COMMANDER_DISABLE_TELEMETRY: '1' }
  }
  t.teardown(() => homes.forEach((home) => rmSync(home, { recursive: true, force: true })))
  // A subtest: its teardowns (the direct client, the gateway and their children) run when it ends.
  await t.test(name, (t) => run(t, env))
  for (const home of homes) await until(() => survivors(home).length === 0, `the processes of ${home} to end`)
  t.pass('no process outlives the test')
}

t.test('desktop-commander: files, a process, its config and its views, through the gateway as directly', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'gw-dc-'))
  t.teardown(() => rmSync(work, { recursive: true, force: true }))
  mkdirSync(join(work, 'sub'))
  writeFileSync(join(work, 'a.txt'), 'one\ntwo\nthree\n')
  // get_config tells the process (its id, memory, counts of calls), a random id per install and the
  // client it sees: the gateway, asserted below. start_process tells the id of the shell it started.
  const mask = (answer: Json): Json => {
    const copy = structuredClone(answer) as { content?: { text?: string }[]; structuredContent?: { config?: Json } }
    const volatile = (config: Record<string, any>) => {
      for (const key of ['clientId', 'currentClient', 'usageStats']) delete config[key]
      delete config.systemInfo.processInfo.pid
      delete config.systemInfo.memory
      return config
    }
    const block = copy.content?.[0]
    if (block?.text?.startsWith('Current configuration:\n')) {
      block.text = JSON.stringify(volatile(JSON.parse(block.text.slice('Current configuration:\n'.length))))
      volatile(copy.structuredContent!.config!)
    }
    if (block?.text !== undefined) block.text = block.text.replace(/^Process started with PID \d+/, 'Process started with PID _')
    return copy as Json
  }
  await isolated(t, 'compared', async (t, env) => {
    const spec = () => ({ command: process.execPath, args: [DESKTOP_COMMANDER], env: env() })
    const { mine, app } = await compare(
      t,
      spec(),
      spec(),
      [
        ['get_config', {}],
        ['list_directory', { path: work }],
        ['read_file', { path: join(work, 'a.txt') }],
        ['read_file', { path: join(work, 'a.txt'), offset: 1, length: 1 }],
        ['start_process', { command: 'echo hi', timeout_ms: 5000 }],
        // Arguments it refuses, in its own words (zod's), as an isError result: the upstream judges.
        ['list_directory', {}],
        ['read_file', { path: 5 }],
        ['nope', {}]
      ],
      { mask }
    )
    const config = (await call(app, { method: 'POST', url: '/tools/get_config/calls', headers: { 'content-type': 'application/json' }, payload: '{"arguments":{}}' })).body
    // One upstream session serves every client of the gateway: the client it knows is the gateway.
    t.match(config.content[0].text, /"currentClient": \{\s+"name": "mcp-pure-http-gateway"/, 'the client it sees is the gateway')
    await otherLists(t, mine, app)
    const { resources } = await mine.client.listResources()
    t.ok(resources.length > 0, 'it serves views (MCP Apps)')
    for (const { uri } of resources) {
      const expected = JSON.stringify((await mine.wire(() => mine.client.readResource({ uri }))).contents)
      t.equal(JSON.stringify((await call(app, { url: `/resources/${encodeURIComponent(uri)}` })).body.contents), expected, `${uri} on REST`)
      t.equal(JSON.stringify((await rpc(app, 'resources/read', { uri }, { era: 'legacy' })).body.result.contents), expected, `${uri} on /mcp`)
    }
  })
})

t.test('mcp-server-code-runner: a snippet run, its refusals, and the lines it writes to stdout outside the protocol', async (t) => {
  await isolated(t, 'compared', async (t, env) => {
    // Each server its own TMPDIR: it writes every snippet to $TMPDIR/tmp.<ext>, one file for all calls.
    const spec = () => ({ command: process.execPath, args: [CODE_RUNNER], env: env() })
    // It logs with console.debug, to stdout, the protocol's stream ("Temporary file created at ...",
    // before every run): not JSON, so dropped, by the SDK directly as by the gateway, and each call
    // still answers.
    const { mine, app } = await compare(t, spec(), spec(), [
      ['run-code', { code: 'console.log(1+1)', languageId: 'javascript' }],
      ['run-code', { code: 'process.stderr.write("x")', languageId: 'javascript' }],
      ['run-code', { code: '', languageId: 'javascript' }],
      // Its own input validation (the SDK's McpServer): -32602 inside an isError result.
      ['run-code', { code: 'console.log(1)', languageId: 'cobol' }],
      ['run-code', { code: 'console.log(1)' }],
      ['nope', {}]
    ])
    t.match((await call(app, { method: 'POST', url: '/tools/run-code/calls', headers: { 'content-type': 'application/json' }, payload: '{"arguments":{"code":"console.log(1+1)","languageId":"javascript"}}' })).body, { content: [{ type: 'text', text: '2\n' }] })
    // Tools only: prompts and resources are -32601 directly, and so through the gateway.
    await otherLists(t, mine, app)
  })
})
