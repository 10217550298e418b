import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startCluster } from '../helpers/cluster-harness.js'
import { EVERYTHING, FILESYSTEM, GATEWAY_BIN, caps } from '../helpers/gateway-helper.js'

// Two `mcp-pure-http gateway --config` instances on one Redis behind nginx round-robin, each with
// its own children: a virtual server over two upstreams, API keys from the command line and from
// MCP_API_KEYS, and rounds of that virtual server answered on the instance that did not ask.
// Requests are made one at a time, so round-robin alternates the instances; each answer's
// X-Upstream says which one it was, and the assertions check it.

const ALICE = 'alice-key-0123456789abcdefghijklmnopqrstuv'
const BOB = 'bob-key-0123456789abcdefghijklmnopqrstuvwxy'

const dir = mkdtempSync(join(tmpdir(), 'gw-cluster-virtual-'))
writeFileSync(join(dir, 'note.txt'), 'a note for the team')
const config = join(dir, 'mcp.json')
writeFileSync(
  config,
  JSON.stringify({
    mcpServers: {
      everything: { command: process.execPath, args: [EVERYTHING, 'stdio'], mount: false },
      files: { command: process.execPath, args: [FILESYSTEM, dir], mount: false }
    },
    virtualServers: {
      team: { include: ['everything/*', 'files/list_directory'], rename: { 'everything/echo': 'say' }, scopes: { 'files/list_*': ['files:list'] } }
    }
  })
)
// alice's key on the command line, bob's in the environment: both add up, on every instance.
const cluster = await startCluster(2, 'redis', [GATEWAY_BIN, 'gateway', '--config', config, '--api-key', `alice:${ALICE}:files:list`], { MCP_API_KEYS: `bob:${BOB}` })
t.teardown(async () => {
  await cluster.stop()
  rmSync(dir, { recursive: true, force: true })
})

interface Answer {
  status: number
  headers: Headers
  // The upstreams' answers, checked field by field.
  body: any
  upstream: string | null
}
async function send(path: string, init: { key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers }
  if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(cluster.url + path, { method: init.body === undefined ? 'GET' : 'POST', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text), upstream: res.headers.get('x-upstream') }
}
/** The same request twice in a row: one answer of each instance. */
async function both(path: string, init: Parameters<typeof send>[1] = {}): Promise<[Answer, Answer]> {
  const pair: [Answer, Answer] = [await send(path, init), await send(path, init)]
  if (pair[0].upstream === pair[1].upstream) throw new Error(`round-robin sent both to ${pair[0].upstream}`)
  return pair
}

t.test('static API keys: the same verdicts on both instances, from --api-key and MCP_API_KEYS alike', async (t) => {
  for (const res of await both('/team/tools')) t.equal(res.status, 401, `no key: 401 from ${res.upstream}`)
  for (const res of await both('/team/tools', { key: 'not-a-key-0123456789abcdefghijklmnop' })) t.equal(res.status, 401, `an unknown key: 401 from ${res.upstream}`)
  for (const key of [ALICE, BOB]) for (const res of await both('/team/tools', { key })) t.equal(res.status, 200, `${key.split('-')[0]}: 200 from ${res.upstream}`)
  const call = { arguments: { path: dir } }
  for (const res of await both('/team/tools/list_directory/calls', { key: ALICE, body: call })) {
    t.match([res.status, res.body.content?.[0].text], [200, /note\.txt/], `alice holds files:list: listed by ${res.upstream}`)
  }
  for (const res of await both('/team/tools/list_directory/calls', { key: BOB, body: call })) {
    t.same([res.status, res.body.message], [403, 'Insufficient scope: tool list_directory requires files:list'], `bob does not: 403 from ${res.upstream}`)
  }
})

t.test("the virtual server's catalogue: the same on both instances, and one instance's ETag holds on the other", async (t) => {
  // get-roots-list and trigger-elicitation-request, which the test below calls, are listed once each
  // server-everything has the gateway's capabilities in.
  let pair: [Answer, Answer] | undefined
  for (let i = 0; i < 600; i++) {
    pair = await both('/team/tools', { key: ALICE })
    const listed = (res: Answer, name: string) => res.body.tools.some((x: { name: string }) => x.name === name)
    if (pair.every((res) => listed(res, 'get-roots-list') && listed(res, 'trigger-elicitation-request'))) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const [a, b] = pair!
  const names = a.body.tools.map((x: { name: string }) => x.name)
  t.ok(names.includes('say') && names.includes('list_directory') && !names.includes('echo'), 'renamed, merged from two upstreams')
  t.same(b.body, a.body, 'the same tools from either instance')
  t.ok(a.headers.get('etag'), 'an ETag')
  t.equal(b.headers.get('etag'), a.headers.get('etag'), 'the same ETag')
  const again = await send('/team/tools', { key: ALICE, headers: { 'if-none-match': a.headers.get('etag')! } })
  t.not(again.upstream, b.upstream)
  t.equal(again.status, 304, `${b.upstream}'s ETag, sent to ${again.upstream}: 304`)
})

t.test('roots rounds of a virtual server, each answered on the instance that did not ask; not by another key', async (t) => {
  const url = '/team/tools/get-roots-list/calls'
  const meta = caps({ roots: {} })
  const roots = [{ uri: 'file:///work/team', name: 'team' }]
  let body: Record<string, unknown> = { arguments: {}, _meta: meta }
  let res = await send(url, { key: ALICE, body })
  t.equal(res.body.resultType, 'input_required', JSON.stringify(res.body))
  let rounds = 0
  while (res.body.resultType === 'input_required') {
    const asked = Object.entries(res.body.inputRequests as Record<string, { method: string }>)
    t.same(asked.map(([, r]) => r.method), asked.map(() => 'roots/list'), 'the upstream asks for roots')
    body = { ...body, requestState: res.body.requestState, inputResponses: Object.fromEntries(asked.map(([key]) => [key, { roots }])) }
    const asker = res.upstream
    res = await send(url, { key: ALICE, body })
    t.not(res.upstream, asker, `round ${++rounds}: asked by ${asker}, answered on ${res.upstream}`)
  }
  t.equal(res.body.resultType, 'complete', JSON.stringify(res.body))
  t.match(res.body.content[0].text, /Current MCP Roots \(1 total\)[\s\S]*URI: file:\/\/\/work\/team/)

  // alice's round, its answer sent by bob to the other instance: the state is bound to alice. (An
  // elicitation: server-everything keeps the roots it was given, and asks for them no more.)
  const elicit = '/team/tools/trigger-elicitation-request/calls'
  const asked = { arguments: {}, _meta: caps({ elicitation: {} }) }
  const first = await send(elicit, { key: ALICE, body: asked })
  t.equal(first.body.resultType, 'input_required', JSON.stringify(first.body))
  const key = Object.keys(first.body.inputRequests)[0]!
  const answer = { ...asked, requestState: first.body.requestState, inputResponses: { [key]: { action: 'accept', content: { name: 'Mallory' } } } }
  const stolen = await send(elicit, { key: BOB, body: answer })
  t.not(stolen.upstream, first.upstream)
  t.match([stolen.status, stolen.body.code], [400, -32602], `refused by ${stolen.upstream}: ${JSON.stringify(stolen.body)}`)
  const own = await send(elicit, { key: ALICE, body: { ...answer, inputResponses: { [key]: { action: 'accept', content: { name: 'Alice' } } } } })
  t.match(own.body.content?.[1].text, /Name: Alice/, `while alice's own answer completes it, on ${own.upstream}`)
})
