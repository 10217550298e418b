import type { Test } from 'tap'
import type { Outcome } from '../../src/gateway/call.js'
import type { RelayedRound, RoundRelay } from '../../src/gateway/relay.js'

/**
 * Relays for a test: `a` and `b` are two instances' views of one relay (memory: the same object;
 * Redis: two connections), closed by the suite.
 */
export interface RelayFactory {
  create(t: Test): Promise<{ a: RoundRelay; b: RoundRelay }>
}

let n = 0
const round = (principal = 'alice'): RelayedRound => ({
  ref: { call: `call-${++n}`, round: 1 } as unknown as RelayedRound['ref'],
  responses: { ask: { action: 'accept', content: { name: 'Ada', nested: { n } } } },
  caps: { elicitation: {} },
  principal
})
const never = () => new AbortController().signal
const GONE = { code: -32602, status: 400, message: 'Invalid or expired requestState: the gateway instance that held this call is gone, and the call with it; call again' }

/**
 * What every {@link RoundRelay} must do (the gateway's rounds across instances: see
 * docs/backends.md), run against MemoryRelay and RedisRelay by test/store/relay.test.ts.
 */
export function relayContract(t: Test, factory: RelayFactory): void {
  t.test('a round reaches the instance that serves it, as a copy, and its outcome comes back', async (t) => {
    const { a, b } = await factory.create(t)
    const seen: RelayedRound[] = []
    const sent = round()
    const answers: Outcome[] = [
      { kind: 'done', result: { content: [{ type: 'text', text: 'ok' }] } },
      { kind: 'ask', requests: { q: { method: 'elicitation/create', params: { message: 'again?' } } }, ref: sent.ref },
      { kind: 'error', error: { code: -32603, message: 'upstream failed' } as never }
    ]
    let i = 0
    const stop = await a.serve('one', async (r) => {
      seen.push(r)
      return answers[i++]!
    })
    t.teardown(stop)
    for (const expected of answers) t.same(await b.send('one', sent, never()), expected, `a ${expected.kind} outcome`)
    t.same(seen[0], sent, 'the round as it was sent')
    t.not(seen[0], sent, 'a copy: the holder cannot change the sender\'s round, nor the other way')
  })

  t.test('a round for an instance nobody serves, or that stopped, is refused as expired state', async (t) => {
    const { a, b } = await factory.create(t)
    await t.rejects(b.send('nobody', round(), never()), GONE, 'never served')
    const stop = await a.serve('two', async () => ({ kind: 'done', result: {} }))
    t.same(await b.send('two', round(), never()), { kind: 'done', result: {} })
    await stop()
    await t.rejects(b.send('two', round(), never()), GONE, 'stopped')
  })

  t.test('each instance gets its own rounds only', async (t) => {
    const { a, b } = await factory.create(t)
    const got: string[] = []
    const stops = await Promise.all(
      ['x', 'y'].map((name) => (name === 'x' ? a : b).serve(name, async (r) => {
        got.push(`${name}:${r.principal}`)
        return { kind: 'done', result: { by: name } }
      }))
    )
    t.teardown(() => Promise.all(stops.map((s) => s())))
    t.same(await a.send('y', round('bob'), never()), { kind: 'done', result: { by: 'y' } })
    t.same(await b.send('x', round('carol'), never()), { kind: 'done', result: { by: 'x' } })
    t.same(got, ['y:bob', 'x:carol'])
  })

  t.test('a sender that gives up is not kept waiting for a holder that takes long', async (t) => {
    const { a, b } = await factory.create(t)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let reached!: () => void
    const handled = new Promise<void>((resolve) => (reached = resolve))
    const stop = await a.serve('slow', async () => {
      reached()
      await held
      return { kind: 'done', result: {} }
    })
    t.teardown(async () => {
      release()
      await stop()
    })
    const ac = new AbortController()
    const sending = b.send('slow', round(), ac.signal)
    await handled
    ac.abort(new Error('the client went away'))
    await t.rejects(sending, { message: 'the client went away' })
  })
}
