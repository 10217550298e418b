import t from 'tap'
import { heldTick, holdTickShape } from '../../src/http/hold-tick-shape.js'

// Why it exists and what it buys: src/http/hold-tick-shape.ts and the commit that added it (bench).
t.test('holdTickShape keeps one nextTick tick object, asked once per process', async (t) => {
  const original = process.nextTick
  let queued = 0
  process.nextTick = ((callback: () => void, ...args: unknown[]) => {
    queued++
    original(callback, ...args)
  }) as typeof process.nextTick
  try {
    holdTickShape()
    holdTickShape()
  } finally {
    process.nextTick = original
  }
  t.equal(queued, 1, 'a second server in the process does not ask again')
  await new Promise((resolve) => setImmediate(resolve))
  const tick = heldTick()
  t.ok(tick !== undefined, 'a tick is held once its callback has run')
  // Node 22's later releases and 24 also carry the tick's async context frame (AsyncContextFrame).
  const symbols = Object.getOwnPropertySymbols(tick).map(String)
  const ids = ['Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)']
  t.ok([ids, [...ids, 'Symbol(kAsyncContextFrame)']].some((shape) => JSON.stringify(shape) === JSON.stringify(symbols)), `a tick's own symbols: ${symbols.join(', ')}`)
  t.equal(typeof (tick as { callback?: unknown }).callback, 'function')
})
