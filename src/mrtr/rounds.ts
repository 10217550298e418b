import type { ValidateFunction } from 'ajv'
import { ConfigurationError, errors } from '../errors.js'
import { isPlainObject } from '../headers.js'
import type { InputRequest, InputResponses } from '../schema/mrtr.js'
import { askThroughQueue } from '../messaging/notify.js'
import type { Mailbox } from '../store/types.js'
import type { CallContext } from '../core/call-context.js'
import { isQuestion, questionFor, type Outcome, type Question } from './questions.js'
import { Declined, runPlan, type Plan } from './resolvers.js'
import { askedOf, responseProblem } from './responses.js'
import { toOutcome } from './outcome.js'
import { askedOfAll, checkAnswers, inputRequiredResult, isHandRolled, type HandRolledInputRequired, type RoundState } from './round-state.js'
import type { SealBinding, SealTarget, StateSealer } from './seal.js'
import { ownValue } from '../core/json-limits.js'

export type { HandRolledInputRequired }

/**
 * Answer `input_required` from a hand-rolled handler. Keys must stay stable across rounds: the
 * retry's `ctx.inputResponses` uses them.
 * @example return inputRequired({ inputRequests: { city: elicit('Which city?', City) }, state: { step: 2 } })
 */
export function inputRequired<S>(r: Omit<HandRolledInputRequired<S>, 'resultType'>): HandRolledInputRequired<S> {
  return { resultType: 'input_required', ...r }
}

export interface RetryParams {
  inputResponses?: InputResponses | undefined
  requestState?: string | undefined
}

/** What the MRTR machinery knows of one tool, prompt or resource, prepared at registration. */
export interface MrtrSpec {
  readonly plan: Plan | undefined
  readonly validateState: ValidateFunction | undefined
}

export type RunResult<T> =
  | { kind: 'done'; value: T }
  | { kind: 'input_required'; result: Record<string, unknown> }
  | { kind: 'declined'; message: string }

/** What a round needs of the server: sealing, the mailbox (legacy-era questions), and the answer timeout. */
export interface RoundServices {
  readonly sealer: StateSealer
  readonly store: Mailbox
  /** How long a legacy-era question waits on /requests for its answer. */
  readonly answerTimeoutMs: number
}

/** Thrown by an inline ask (ctx.elicit and friends) in the modern era: ask, then replay. */
class AskSignal {
  constructor(
    readonly key: string,
    readonly question: Question<unknown>
  ) {}
}

/**
 * Run a request that may be retried with input (SEP-2322): open and check the sealed state, check
 * the answers against what was asked, run the resolvers, then the handler. In 2026-07-28 a round
 * that still needs input answers `input_required` with newly sealed state, and any instance can take
 * the next. In the legacy era the same questions go to the client's `/requests` queue and the rounds
 * continue here, in this request, as the answers arrive.
 */
export async function runRound<T>(
  svc: RoundServices,
  spec: MrtrSpec,
  binding: SealTarget,
  args: Record<string, unknown>,
  params: RetryParams,
  ctx: CallContext,
  invoke: (ctx: CallContext) => T | HandRolledInputRequired | Promise<T | HandRolledInputRequired>
): Promise<RunResult<T>> {
  const legacy = ctx.era === 'legacy'
  let state: RoundState = {}
  if (params.requestState !== undefined) {
    const opened = svc.sealer.open(params.requestState, sealBinding(binding, ctx), ctx.log)
    if (!isPlainObject(opened)) throw errors.invalidParams('Invalid or expired requestState')
    state = opened as RoundState
  }
  let responses = params.inputResponses
  let retried = params.inputResponses !== undefined
  // Answers sent with no requestState answer no question yet. One that fits the question a resolver
  // or ctx.elicit asks in this first round is taken (SEP-2322: ignore what is not recognised, use
  // what is); a hand-rolled handler's questions are unknown before it runs, so it never sees them.
  let presupplied = params.requestState === undefined ? params.inputResponses : undefined
  // Each pass is one round: in the modern era the first that needs input returns; legacy loops.
  for (;;) {
    const answers = checkAnswers(state, responses)
    if (state.u !== undefined && spec.validateState !== undefined && !spec.validateState(state.u)) {
      ctx.log.warn({ target: binding.target }, 'requestState does not match the state schema (another version of the code?)')
      throw errors.invalidParams('Invalid or expired requestState')
    }
    const recorded = { ...state.o }
    const answerOf = (name: string, q: Question<unknown>): Outcome<unknown> | undefined => {
      const prior = ownValue(recorded, name)
      if (prior !== undefined && prior.h === q.digest) return prior.r
      const given = ownValue(answers, name)
      let answer = given !== undefined && ownValue(state.q, name)?.h === q.digest ? given : undefined
      const offered = ownValue(presupplied, name)
      if (answer === undefined && offered !== undefined && responseProblem(askedOf(q.request, q.digest), offered) === undefined) {
        answer = offered as Record<string, unknown>
      }
      if (answer === undefined) return undefined
      const outcome = toOutcome(q, answer)
      recorded[name] = { h: q.digest, r: outcome }
      return outcome
    }
    // Questions still open after this pass, and what to carry with them.
    let pending: Map<string, Question<unknown> | InputRequest> | undefined
    let carry: RoundState = { o: recorded }

    let resolved: Record<string, unknown> = {}
    if (spec.plan !== undefined) {
      let resolution
      try {
        resolution = await runPlan(spec.plan, args, ctx, answerOf)
      } catch (err) {
        if (err instanceof Declined) return { kind: 'declined', message: err.message }
        throw err
      }
      if (resolution.values === undefined) pending = resolution.pending
      else resolved = resolution.values
    }

    if (pending === undefined) {
      let asks = 0
      const ask = async (q: Question<unknown>): Promise<Outcome<unknown>> => {
        if (legacy) {
          const got = await askThroughQueue(svc.store, ctx, new Map([['ask', q]]), svc.answerTimeoutMs)
          return toOutcome(q, got.ask!)
        }
        // Modern: answered in an earlier round (same position, same question), or ask and replay.
        const key = `ask.${asks++}`
        const known = answerOf(key, q)
        if (known !== undefined) return known
        throw new AskSignal(key, q)
      }
      let out
      try {
        // The round's view, on the call's one context (see CallContext).
        ctx.inputResponses = retried ? answers : undefined
        ctx.requestState = state.u
        ctx.resolved = resolved
        ctx.ask = ask
        // A handler that answers at once is not awaited: no promise and no extra turn for it.
        const returned = invoke(ctx)
        out = isThenable(returned) ? await returned : returned
      } catch (err) {
        if (!(err instanceof AskSignal)) throw err
        out = undefined
        pending = new Map([[err.key, err.question]])
      }
      if (pending === undefined) {
        if (!isHandRolled(out)) return { kind: 'done', value: out as T }
        if (spec.plan !== undefined) throw new ConfigurationError(`${binding.target}: a handler with resolvers returned input_required`)
        pending = new Map(Object.entries(out.inputRequests ?? {}))
        if (pending.size === 0 && out.state === undefined) {
          throw new ConfigurationError(`${binding.target}: input_required needs inputRequests or state`)
        }
        carry = out.state === undefined ? {} : { u: out.state }
      }
    }

    const questions = new Map([...pending].map(([k, v]) => [k, isQuestion(v) ? v : questionFor(v)] as const))
    if (!legacy) return { kind: 'input_required', result: inputRequiredResult(svc.sealer, sealBinding(binding, ctx), questions, carry, ctx) }
    // Legacy era: ask through /requests, then go round again with the answers (nothing to seal).
    responses = questions.size === 0 ? {} : await askThroughQueue(svc.store, ctx, questions, svc.answerTimeoutMs)
    state = { ...carry, q: askedOfAll(questions) }
    retried = true
    presupplied = undefined
  }
}

/** What sealed state is bound to. The argument digest is computed only here: most calls neither open nor seal. */
function sealBinding(binding: SealTarget, ctx: CallContext): SealBinding {
  return { method: binding.method, target: binding.target, args: binding.args, principal: ctx.principal.id }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function'
}
