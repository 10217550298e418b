import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { MEMORY, SEQUENTIAL_THINKING } from '../tools/paths.js'
import { call } from '../helpers/helper.js'
import { rpc } from '../helpers/rpc.js'
import { direct, serveUpstream } from '../helpers/gateway-helper.js'

// More of the servers issue #41 tried, each called directly (the official SDK's client over stdio)
// and through the gateway on both faces: the same capabilities, tools and answers.

type Spec = { command: string; args: string[]; env?: Record<string, string> }

/** Each call's answer directly, and on REST and on /mcp (2025-11-25): results, `isError` results, errors. */
async function compare(t: Test, own: Spec, through: Spec, calls: [string, Record<string, unknown>][]) {
  const mine = await direct(t, own)
  const { app } = await serveUpstream(t, through)
  const legacy = { 'mcp-protocol-version': '2025-11-25' }
  const init = (await rpc(app, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }, { era: 'legacy' })).body.result
  const { extensions: _extensions, ...caps } = init.capabilities
  t.same(Object.keys(caps).sort(), Object.keys(mine.client.getServerCapabilities()!).sort(), 'the same capabilities')
  const names = (await call(app, { url: '/tools', headers: legacy })).body.tools.map((x: { name: string }) => x.name)
  t.same(names, (await mine.client.listTools()).tools.map((x) => x.name), 'the same tools')
  // Each call made twice on each side (REST, then /mcp), so that stateful servers stay in step.
  for (const [name, args] of calls) {
    let expected = await mine.callTool(name, args)
    const rest = await call(app, { method: 'POST', url: `/tools/${name}/calls`, headers: { ...legacy, 'content-type': 'application/json' }, payload: JSON.stringify({ arguments: args }) })
    const body = rest.body.code === undefined ? rest.body : { error: { code: rest.body.code, message: rest.body.message } }
    t.same(body, expected, `${name} ${JSON.stringify(args)} on REST`)
    expected = await mine.callTool(name, args)
    const res = await rpc(app, 'tools/call', { name, arguments: args }, { era: 'legacy' })
    t.same(res.body.result ?? { error: res.body.error }, expected, `${name} ${JSON.stringify(args)} on /mcp`)
  }
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
