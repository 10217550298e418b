import t from 'tap'
import fc from 'fast-check'
import { ExpiryHeap } from '../../src/store/expiry-heap.js'

interface Item {
  readonly id: number
  readonly expiresAt: number
  gone: boolean
}

// Against a plain model: after any sequence of pushes, removals (marking stale) and takes, the
// heap's first live item is the model's earliest, and takeExpired hands out exactly the model's
// expired items, earliest first. Seeded, with a fixed run count.
t.test('ExpiryHeap: the earliest live item, expired ones in order, stale ones skipped', async (t) => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('push' as const), at: fc.integer({ min: 0, max: 50 }) }),
    fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('take' as const), now: fc.integer({ min: 0, max: 50 }) })
  )
  let checked = 0
  fc.assert(
    fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const heap = new ExpiryHeap<Item>((i) => i.gone)
      let live: Item[] = []
      let id = 0
      for (const o of ops) {
        if (o.kind === 'push') {
          const item = { id: id++, expiresAt: o.at, gone: false }
          heap.push(item)
          live.push(item)
        } else if (o.kind === 'remove' && live.length > 0) {
          const item = live[o.pick % live.length]!
          item.gone = true
          live = live.filter((i) => i !== item)
        } else if (o.kind === 'take') {
          const taken: number[] = []
          for (let i = heap.takeExpired(o.now); i !== undefined; i = heap.takeExpired(o.now)) taken.push(i.expiresAt)
          const expired = live.filter((i) => i.expiresAt <= o.now).map((i) => i.expiresAt).sort((a, b) => a - b)
          if (JSON.stringify(taken) !== JSON.stringify(expired)) return false
          live = live.filter((i) => i.expiresAt > o.now)
        }
        const earliest = Math.min(...live.map((i) => i.expiresAt))
        const first = heap.first()
        if ((first?.expiresAt ?? Infinity) !== earliest || first?.gone === true) return false
        if (heap.size < live.length) return false
        checked++
      }
      return true
    }),
    { seed: 22, numRuns: 300 }
  )
  t.ok(checked > 1000, `${checked} states checked`)
  const heap = new ExpiryHeap<Item>((i) => i.gone)
  heap.push({ id: 1, expiresAt: 5, gone: true })
  t.equal(heap.first(), undefined, 'only stale items: none')
  t.equal(heap.size, 0, 'and they are discarded')
})
