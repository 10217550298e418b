import { randomBytes } from 'node:crypto'
import { StateSealer, digestArguments } from '../../src/mrtr/seal.js'

const silent = { debug() {}, info() {}, warn() {}, error() {} }

/**
 * Seal and open one requestState in-process, as a retry pays it: the median over batches of the
 * mean CPU time per operation, in µs (CPU time, not wall time: other work on the machine does not
 * count). The state is the size the demo's update_work_item seals.
 */
export function sealMicro(iterations = 20_000, batches = 7): { usPerSealOpen: number; usPerSeal: number; usPerOpen: number } {
  const sealer = new StateSealer([{ kid: 'bench', key: randomBytes(32) }])
  const binding = { principal: 'anonymous', method: 'tools/call', target: 'update_work_item', args: digestArguments({ workItemId: 4242, fields: { 'System.State': 'Resolved' } }) }
  const state = {
    q: {
      resolution: {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: 'Resolving Bug #4242 requires a resolution. How was this bug resolved?',
          requestedSchema: { type: 'object', required: ['resolution'], properties: { resolution: { type: 'string', enum: ['Fixed', "Won't Fix", 'Duplicate', 'By Design'] } } }
        }
      }
    }
  }
  const token = sealer.seal(binding, state)
  const time = (op: () => void) => {
    for (let i = 0; i < iterations / 4; i++) op() // warm-up: JIT
    const samples: number[] = []
    for (let b = 0; b < batches; b++) {
      const start = process.cpuUsage()
      for (let i = 0; i < iterations; i++) op()
      const used = process.cpuUsage(start)
      samples.push((used.user + used.system) / iterations)
    }
    return samples.sort((a, b) => a - b)[Math.floor(batches / 2)]!
  }
  return {
    usPerSealOpen: time(() => sealer.open(sealer.seal(binding, state), binding, silent)),
    usPerSeal: time(() => sealer.seal(binding, state)),
    usPerOpen: time(() => sealer.open(token, binding, silent))
  }
}
