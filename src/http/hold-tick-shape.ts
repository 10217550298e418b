import { executionAsyncResource } from 'node:async_hooks'

/**
 * Keep one `process.nextTick` tick object alive for the life of the process.
 *
 * Node 20 builds each tick as an object literal with two computed symbol keys, and V8 keeps the
 * hidden classes ("maps") of such objects only while an object using them is alive. Between
 * requests no tick is alive, so (as far as we can tell) a full garbage collection frees them and
 * the next tick builds them anew. In most launches of this server nextTick's optimized code then
 * defined those keys through the runtime (`Runtime_DefineKeyedOwnPropertyInLiteral`, map
 * transitions and migrations) at ~0.4 µs a tick, where launches that escaped it took ~0.02 µs; a
 * request takes six (a POST) to nine (a GET) ticks in Node's HTTP code. Holding one tick object
 * keeps its maps, and every launch measured then took the fast path (bench/README.md, "Why
 * launches differ"). Bare Fastify, with less to load at start, escaped it in every launch measured.
 *
 * The tick is the resource of its own callback (`executionAsyncResource`); no async hook is
 * installed. Where an engine builds ticks some other way, nothing is held.
 */
let held: object | undefined
let asked = false

export function holdTickShape(): void {
  if (asked) return
  asked = true
  process.nextTick(() => {
    const tick = executionAsyncResource()
    if (Object.getOwnPropertySymbols(tick).length > 0 && 'callback' in tick) held = tick
  })
}

/** The tick object held, for the test. */
export function heldTick(): object | undefined {
  return held
}
