import { errors } from '../errors.js'
import type { InputRequiredResult } from '../schema/mrtr.js'
import type { RequestContext } from './context.js'

const CAPABILITY_OF: Record<string, string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots'
}

/**
 * Check an `input_required` result before it leaves: it must ask for something (requests or state),
 * only for what the client declared it can answer, and only in an era that has MRTR. Legacy-era
 * clients get the same handlers through server-to-client requests once /requests exists; until then
 * they are told which capability the call needs (400 -32021).
 */
export function guardInputRequired(result: InputRequiredResult, ctx: RequestContext): InputRequiredResult {
  if (result.inputRequests === undefined && result.requestState === undefined) {
    throw new Error('input_required result needs inputRequests or requestState')
  }
  const required: Record<string, unknown> = {}
  for (const req of Object.values(result.inputRequests ?? {})) {
    const cap = CAPABILITY_OF[req.method]
    if (cap !== undefined && (ctx.era === 'legacy' || ctx.clientCapabilities?.[cap] === undefined)) required[cap] = {}
  }
  if (Object.keys(required).length > 0) {
    throw errors.missingCapability(required, `This request needs the client capabilities: ${Object.keys(required).join(', ')}`)
  }
  if (ctx.era === 'legacy') throw errors.missingCapability({}, 'This request needs multi round-trip support (2026-07-28)')
  return result
}
