import t from 'tap'
import { wireErrorOf } from '../../src/errors.js'
import { MemoryOnce } from '../../src/store/memory-once.js'
import { MemoryStore } from '../../src/store/memory.js'
import { StoreFull } from '../../src/store/store-errors.js'

t.test('memory once: bounded; full refuses until the first claim expires, never forgets one early', async (t) => {
  let now = 1000
  const keys = new MemoryOnce(2, () => now)
  t.equal(await keys.once('a', 500), true)
  t.equal(await keys.once('b', 2000), true)
  const err = await keys.once('c', 100).catch((e: unknown) => e)
  t.ok(err instanceof StoreFull, 'a third key is refused')
  t.match(wireErrorOf(err), { status: 503, headers: { 'retry-after': '1' } }, 'with when the first claim expires')
  t.equal(await keys.once('a', 500), false, 'the claims that fill it still hold')
  now = 1500
  t.equal(await keys.once('c', 100), true, 'once the first expired, there is room')
  t.equal(await keys.once('b', 100), false, 'a key still held is refused when full, not counted')
  now = 1600
  t.equal(await keys.once('a', 0), true, 'a claim that expired is free; a zero ttl still holds a moment')
  t.equal(await keys.once('a', 0), false)
  keys.clear()
  t.equal(await keys.once('b', 10), true, 'clear forgets all')
})

t.test('the memory store hands one table to every caller, and closing empties it', async (t) => {
  const store = new MemoryStore({ maxOnceKeys: 10 })
  const one = await store.companions.onceKeys!()
  t.equal(await store.companions.onceKeys!(), one)
  t.equal(await one.once('k', 60_000), true)
  await store.close()
  t.equal(await one.once('k', 60_000), true)
})
