import t from 'tap'
import { settleNextTick } from '../src/http/settle-next-tick.js'

// Why it exists and what it buys: src/http/settle-next-tick.ts and the commit that added it (bench).
t.test('settleNextTick: 20,000 no-op ticks the first time, none after (one process, many servers)', async (t) => {
  const original = process.nextTick
  let queued = 0
  process.nextTick = ((callback: () => void, ...args: unknown[]) => {
    queued++
    original(callback, ...args)
  }) as typeof process.nextTick
  try {
    settleNextTick()
    const first = queued
    settleNextTick()
    t.equal(first, 20_000)
    t.equal(queued, first, 'a second server in the process does not repeat it')
  } finally {
    process.nextTick = original
  }
})
