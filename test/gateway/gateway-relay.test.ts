import t, { type Test } from 'tap'
import { RedisRelay, MemoryRelay, type RoundRelay } from '../../src/gateway/relay.js'
import { RedisStore } from '../../src/store/redis.js'
import type { Store } from '../../src/store/types.js'
import { call, json } from '../helpers/helper.js'
import { caps, everythingStdio, serveUpstream, until } from '../helpers/gateway-helper.js'
import { startRedis } from '../helpers/redis-server.js'

const ring = `k1:${Buffer.alloc(32, 7).toString('base64url')}`
const meta = caps({ elicitation: {} })
const url = '/tools/trigger-elicitation-request/calls'

/** Two gateways (each with its own upstream child) sharing a key ring, a relay and a store kind. */
async function pair(t: Test, relay: () => RoundRelay, store: () => Store | undefined = () => undefined, stateTtlMs?: number) {
  const server = stateTtlMs === undefined ? { stateKeys: ring } : { stateKeys: ring, stateTtlMs }
  const one = async () => {
    const s = store()
    return serveUpstream(t, everythingStdio, { relay: relay(), server, ...(s === undefined ? {} : { store: s }) })
  }
  const a = await one()
  const b = await one()
  await until(() => a.gw.mcp.tools.has('trigger-elicitation-request') && b.gw.mcp.tools.has('trigger-elicitation-request'), 'the tools')
  return { a, b }
}

type Pair = Awaited<ReturnType<typeof pair>>

async function roundTrip(t: Test, { a, b }: Pair) {
  const first = await call(a.app, { method: 'POST', url, ...json({ arguments: {}, _meta: meta }) })
  const key = Object.keys(first.body.inputRequests)[0]!
  // The retry lands on the other instance: relayed to the one whose upstream request waits.
  const done = await call(b.app, {
    method: 'POST',
    url,
    ...json({ arguments: {}, _meta: meta, requestState: first.body.requestState, inputResponses: { [key]: { action: 'accept', content: { name: 'Relayed' } } } })
  })
  t.equal(done.body.resultType, 'complete')
  t.match(done.body.content[1].text, /Name: Relayed/)
  // The question is still open after a retry that answers nothing; this retry cannot be asked it:
  // the holder refuses, and its refusal crosses back.
  const again = await call(a.app, { method: 'POST', url, ...json({ arguments: {}, _meta: meta }) })
  const refused = await call(b.app, {
    method: 'POST',
    url,
    ...json({ arguments: {}, _meta: caps({}), requestState: again.body.requestState, inputResponses: { nothing: { action: 'decline' } } })
  })
  t.same([refused.status, refused.body.code], [400, -32021])
  // The holder is gone: its rounds are gone with it.
  const third = await call(a.app, { method: 'POST', url, ...json({ arguments: {}, _meta: meta }) })
  await a.gw.close()
  const orphan = await call(b.app, {
    method: 'POST',
    url,
    ...json({ arguments: {}, _meta: meta, requestState: third.body.requestState, inputResponses: { [key]: { action: 'decline' } } })
  })
  t.same([orphan.status, orphan.body.message], [400, 'Invalid or expired requestState: the gateway instance that held this call is gone, and the call with it; call again'])
}

t.test('memory relay: a round answered on the other gateway completes the call', async (t) => {
  const shared = new MemoryRelay()
  await roundTrip(t, await pair(t, () => shared))
})

t.test('Redis relay: the same, through pub/sub on a real Redis', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const stores: RedisStore[] = []
  const relays: RedisRelay[] = []
  // Registered before the gateways' own teardowns, so it runs after them (teardowns run last first).
  t.teardown(async () => {
    for (const r of relays) await r.close()
    for (const s of stores) await s.close()
  })
  const store = () => {
    const s = new RedisStore({ url: redis.url, prefix: 'gwtest:' })
    stores.push(s)
    return s
  }
  const relay = () => {
    const r = new RedisRelay(stores.at(-1)!.client, 'gwtest:')
    relays.push(r)
    return r
  }
  // Each gateway's relay takes its own store's connection: the store is made first.
  const pairOf = await pair(t, () => ((store(), relay())), () => stores.at(-1))
  await roundTrip(t, pairOf)
})

t.test('an abandoned round: when its state expires the upstream is answered cancel', async (t) => {
  const { a } = await pair(t, () => new MemoryRelay(), undefined, 1000)
  const sent: { result?: { action?: string } }[] = []
  const transport = a.gw.upstream.client!.transport!
  const send = transport.send.bind(transport)
  transport.send = async (message, options) => {
    sent.push(message as never)
    return send(message, options)
  }
  const first = await call(a.app, { method: 'POST', url, ...json({ arguments: {}, _meta: meta }) })
  t.equal(first.body.resultType, 'input_required')
  await until(() => sent.some((m) => m.result?.action === 'cancel'), 'the cancel upstream')
  t.ok(sent.some((m) => (m as { method?: string }).method === 'notifications/cancelled'), 'and its request cancelled')
})
