import type { RequestContext } from '../core/request-context.js'
import { errors } from '../errors.js'
import type { SealBinding, SealTarget, StateSealer } from './seal.js'
import { copyOf } from '../core/results.js'

const RESUME = Symbol.for('mcp-pure-http.resume')

/** A partial result, and where the next request picks up. */
export type Resumable<R> = R & { readonly [RESUME]: unknown }

/**
 * Return part of the work (or of a large result) and let the client continue: the result goes out
 * with `_meta.nextResumeToken`, a sealed token holding `next`; the client repeats the request with
 * `_meta.resumeToken` and the handler finds `next` in `ctx.resumed`. The final result is returned as
 * usual and carries no token.
 * @example
 * const from = (ctx.resumed as number | undefined) ?? 0
 * return from + PAGE < total ? resumable(page(from), from + PAGE) : page(from)
 */
export function resumable<R extends object>(result: R, next: unknown): Resumable<R> {
  return Object.assign(result, { [RESUME]: next }) as Resumable<R>
}

export function isResumable(v: unknown): v is Resumable<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && RESUME in v
}

// A resume token is sealed for another target than a requestState, so neither opens as the other.
// Members read one by one: `b` may compute its digest lazily (a getter a spread would skip).
const purpose = (b: SealTarget, principal: string): SealBinding => ({
  method: b.method,
  args: b.args,
  principal,
  target: `${b.target}#resume`
})

/** The state of `_meta.resumeToken`, when the request carries one (400 -32602 when it does not open). */
export function openResume(sealer: StateSealer, binding: SealTarget, ctx: RequestContext): unknown {
  const token = ctx.meta?.resumeToken
  if (token === undefined) return undefined
  if (typeof token !== 'string') throw errors.invalidParams('_meta.resumeToken must be a string')
  try {
    return (sealer.open(token, purpose(binding, ctx.principal.id), ctx.log) as { r: unknown }).r
  } catch {
    throw errors.invalidParams('Invalid or expired resumeToken')
  }
}

/**
 * Turn a handler's return into the wire result: a resumable one gets `_meta.nextResumeToken`
 * (never on an error result: the operation stops there).
 */
export function finishResumable(
  sealer: StateSealer,
  binding: SealTarget,
  ctx: RequestContext,
  result: Record<string, unknown>,
  next: unknown
): Record<string, unknown> {
  if (result.isError === true) return result
  const token = sealer.seal(purpose(binding, ctx.principal.id), { r: next })
  const meta = copyOf((result._meta ?? {}) as Record<string, unknown>)
  meta.nextResumeToken = token
  const out = copyOf(result)
  out._meta = meta
  return out
}

export { RESUME }
