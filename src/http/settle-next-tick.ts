/**
 * Settle `process.nextTick` before the first request, once per process.
 *
 * Node 20 builds each tick as an object literal with two computed symbol keys. Which calls V8 has
 * seen when it optimizes `nextTick` decides how those keys are defined from then on: inline, or
 * through the runtime (`DefineKeyedOwnPropertyInLiteral`, with map transitions and migrations) at
 * several times the cost. A request here takes six ticks. In most launches of this server the
 * runtime path won, and `tools/call` echo ran at ~21k req/s where the other launches ran at ~28k
 * (same build, same machine: a launch-to-launch split that no profile of our code explained).
 * Twenty thousand calls of one shape before the server starts make V8 optimize `nextTick` on
 * those: every launch measured then took the fast path (bench numbers in the commit that added this).
 * Cost: about 2 ms, once. Harmless where the engine does not need it.
 */
let settled = false

export function settleNextTick(): void {
  if (settled) return
  settled = true
  for (let i = 0; i < 20_000; i++) process.nextTick(noop)
}

function noop(): void {}
