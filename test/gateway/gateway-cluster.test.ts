import t from 'tap'
import { startCluster } from '../helpers/cluster-harness.js'
import { EVERYTHING, GATEWAY_BIN, caps } from '../helpers/gateway-helper.js'

// Two `mcp-pure-http gateway` instances, each with its own server-everything child, on one Redis
// behind nginx round-robin: what each answer's X-Upstream says is what the assertions check.
const cluster = await startCluster(2, 'redis', [GATEWAY_BIN, 'gateway', '--', process.execPath, EVERYTHING, 'stdio'])
t.teardown(() => cluster.stop())

const post = async (path: string, body: unknown) => {
  const res = await fetch(cluster.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as any, upstream: res.headers.get('x-upstream') }
}

t.test('an elicitation round that lands on the other instance still completes the call', async (t) => {
  const url = '/tools/trigger-elicitation-request/calls'
  const meta = caps({ elicitation: {} })
  // The conditional tools appear once each upstream has said list_changed: on both instances
  // (round-robin alternates them) before the round that must cross.
  let first
  const ready = new Set<string | null>()
  for (let i = 0; i < 600 && ready.size < 2; i++) {
    first = await post(url, { arguments: {}, _meta: meta })
    if (first.status === 200) ready.add(first.upstream)
    else await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.equal(first!.body.resultType, 'input_required')
  const key = Object.keys(first!.body.inputRequests)[0]!
  const done = await post(url, {
    arguments: {},
    _meta: meta,
    requestState: first!.body.requestState,
    inputResponses: { [key]: { action: 'accept', content: { name: 'Clustered' } } }
  })
  t.not(done.upstream, first!.upstream, 'the retry was served by the other instance')
  t.equal(done.body.resultType, 'complete', JSON.stringify(done.body))
  t.match(done.body.content?.[1].text, /Name: Clustered/)
})
