import type { ValidateFunction } from 'ajv'
import { ConfigurationError, errors } from '../errors.js'
import { isPlainObject } from '../headers.js'
import type { InputRequest, InputResponses } from '../schema/mrtr.js'
import { askThroughQueue } from '../messaging/notify.js'
import type { StoreRoles } from '../store/types.js'
import type { CallContext } from '../core/call-context.js'
import { isQuestion, questionFor, type Outcome, type Question } from './questions.js'
import { Declined, runPlan, type Plan, type Resolution } from './resolvers.js'
import { askedOf, responseProblem } from './responses.js'
import { toOutcome } from './outcome.js'
import { checkAnswers, inputRequiredResult, isHandRolled, withQuestions, type HandRolledInputRequired, type RoundState } from './round-state.js'
import type { SealBinding, SealTarget, StateSealer } from './seal.js'
import { ownValue } from '../core/json-limits.js'
import { isThenable, type MaybePromise } from '../core/maybe-promise.js'
import { copyOf } from '../core/results.js'

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
  readonly store: Pick<StoreRoles, 'mailbox'>
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
 *
 * The result is a value when every step answered at once (a handler that returns its result, sync
 * resolvers): most calls pay for no promise and no turn. It is a promise from the first step that waits.
 */
export function runRound<T>(
  svc: RoundServices,
  spec: MrtrSpec,
  binding: SealTarget,
  args: Record<string, unknown>,
  params: RetryParams,
  ctx: CallContext,
  invoke: (ctx: CallContext) => T | HandRolledInputRequired | PromiseLike<T | HandRolledInputRequired>
): MaybePromise<RunResult<T>> {
  let state: RoundState = NO_STATE
  if (params.requestState !== undefined) {
    const opened = svc.sealer.open(params.requestState, sealBinding(binding, ctx), ctx.log)
    if (!isPlainObject(opened)) throw errors.invalidParams('Invalid or expired requestState')
    state = opened as RoundState
  }
  return new Round<T>(svc, spec, binding, args, ctx, invoke, state, params).pass()
}

const NO_STATE: RoundState = Object.freeze({})
const NO_VALUES: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>

/**
 * One request's rounds: each {@link pass} is one round, whose steps (resolvers, handler, conclusion)
 * go on synchronously while they can and through a promise from the first that waits. In the modern
 * era the first round that needs input returns; the legacy era goes round again with the answers.
 */
class Round<T> {
  // The round's answers, and what it records of them (carried in the sealed state).
  #answers: Readonly<InputResponses> = NO_VALUES as Readonly<InputResponses>
  #recorded: NonNullable<RoundState['o']> = NO_VALUES as never
  // Questions still open after this pass, and what to carry with them (undefined: the record).
  #pending: Map<string, Question<unknown>> | undefined = undefined
  #carry: RoundState | undefined = undefined
  #asks = 0
  #retried: boolean
  #responses: InputResponses | undefined
  // Answers sent with no requestState answer no question yet. One that fits the question a resolver
  // or ctx.elicit asks in this first round is taken (SEP-2322: ignore what is not recognised, use
  // what is); a hand-rolled handler's questions are unknown before it runs, so it never sees them.
  #presupplied: InputResponses | undefined

  constructor(
    private readonly svc: RoundServices,
    private readonly spec: MrtrSpec,
    private readonly binding: SealTarget,
    private readonly args: Record<string, unknown>,
    private readonly ctx: CallContext,
    private readonly invoke: (ctx: CallContext) => T | HandRolledInputRequired | PromiseLike<T | HandRolledInputRequired>,
    private state: RoundState,
    params: RetryParams
  ) {
    this.#responses = params.inputResponses
    this.#retried = params.inputResponses !== undefined
    this.#presupplied = params.requestState === undefined ? params.inputResponses : undefined
  }

  pass(): MaybePromise<RunResult<T>> {
    const { state, spec } = this
    this.#answers = checkAnswers(state, this.#responses)
    if (state.u !== undefined && spec.validateState !== undefined && !spec.validateState(state.u)) {
      this.ctx.log.warn({ target: this.binding.target }, 'requestState does not match the state schema (another version of the code?)')
      throw errors.invalidParams('Invalid or expired requestState')
    }
    this.#recorded = copyOf(state.o ?? {})
    this.#pending = undefined
    this.#carry = undefined
    this.#asks = 0
    if (spec.plan === undefined) return this.#run(NO_VALUES)
    let resolution
    try {
      resolution = runPlan(spec.plan, this.args, this.ctx, (name, q) => this.#answerOf(name, q))
    } catch (err) {
      return declinedOr(err)
    }
    return isThenable(resolution) ? resolution.then((r) => this.#planned(r), declinedOr) : this.#planned(resolution)
  }

  /** The outcome for a question: recorded in an earlier round, answered now, or sent ahead of it. */
  #answerOf(name: string, q: Question<unknown>): Outcome<unknown> | undefined {
    const recorded = this.#recorded
    const prior = ownValue(recorded, name)
    if (prior !== undefined && prior.h === q.digest) return prior.r
    const given = ownValue(this.#answers, name)
    let answer = given !== undefined && ownValue(this.state.q, name)?.h === q.digest ? given : undefined
    const offered = ownValue(this.#presupplied, name)
    if (answer === undefined && offered !== undefined && responseProblem(askedOf(q.request, q.digest), offered) === undefined) {
      answer = offered as Record<string, unknown>
    }
    if (answer === undefined) return undefined
    const outcome = toOutcome(q, answer)
    recorded[name] = { h: q.digest, r: outcome }
    return outcome
  }

  #planned(resolution: Resolution): MaybePromise<RunResult<T>> {
    if (resolution.values !== undefined) return this.#run(resolution.values)
    this.#pending = resolution.pending
    return this.#conclude()
  }

  /** The handler, on the call's one context with this round's view (see CallContext). */
  #run(resolved: Record<string, unknown>): MaybePromise<RunResult<T>> {
    const ctx = this.ctx
    ctx.inputResponses = this.#retried ? this.#answers : undefined
    ctx.requestState = this.state.u
    ctx.resolved = resolved
    ctx.ask = this.#ask
    let returned
    try {
      returned = this.invoke(ctx)
    } catch (err) {
      return this.#askedOrThrow(err)
    }
    // A handler that answers at once is not awaited: no promise and no extra turn for it.
    if (!isThenable(returned)) return this.#answered(returned)
    return Promise.resolve(returned).then(
      (out) => this.#answered(out),
      (err) => this.#askedOrThrow(err)
    )
  }

  // ctx.ask (ctx.elicit and friends). Legacy: ask through /requests and wait. Modern: answered in
  // an earlier round (same position, same question), or ask and replay the handler with the answer.
  readonly #ask = async (q: Question<unknown>): Promise<Outcome<unknown>> => {
    if (this.ctx.era === 'legacy') {
      const got = await askThroughQueue(this.svc.store.mailbox, this.ctx, new Map([['ask', q]]), this.svc.answerTimeoutMs)
      return toOutcome(q, got.ask!)
    }
    const key = `ask.${this.#asks++}`
    const known = this.#answerOf(key, q)
    if (known !== undefined) return known
    throw new AskSignal(key, q)
  }

  #askedOrThrow(err: unknown): MaybePromise<RunResult<T>> {
    if (!(err instanceof AskSignal)) throw err
    this.#pending = new Map([[err.key, err.question]])
    return this.#conclude()
  }

  #answered(out: T | HandRolledInputRequired): MaybePromise<RunResult<T>> {
    if (!isHandRolled(out)) return { kind: 'done', value: out as T }
    if (this.spec.plan !== undefined) throw new ConfigurationError(`${this.binding.target}: a handler with resolvers returned input_required`)
    const pending = questionsOf(out.inputRequests ?? {})
    if (pending.size === 0 && out.state === undefined) {
      throw new ConfigurationError(`${this.binding.target}: input_required needs inputRequests or state`)
    }
    this.#pending = pending
    this.#carry = out.state === undefined ? {} : { u: out.state }
    return this.#conclude()
  }

  /** Questions remain: answer `input_required` (modern), or ask through /requests and go round again (legacy). */
  #conclude(): MaybePromise<RunResult<T>> {
    const { ctx, svc } = this
    const questions = this.#pending!
    const carry = this.#carry ?? { o: this.#recorded }
    if (ctx.era !== 'legacy') return { kind: 'input_required', result: inputRequiredResult(svc.sealer, sealBinding(this.binding, ctx), questions, carry, ctx) }
    // Legacy era: nothing to seal; the answers come back through the store.
    const asked = questions.size === 0 ? Promise.resolve({}) : askThroughQueue(svc.store.mailbox, ctx, questions, svc.answerTimeoutMs)
    return asked.then((responses) => {
      this.#responses = responses
      this.state = withQuestions(carry, questions)
      this.#retried = true
      this.#presupplied = undefined
      return this.pass()
    })
  }
}

/** A hand-rolled handler's inputRequests as questions: a raw MCP request gets its digest here. */
function questionsOf(raw: Record<string, Question<unknown> | InputRequest>): Map<string, Question<unknown>> {
  const questions = new Map<string, Question<unknown>>()
  for (const [k, v] of Object.entries(raw)) questions.set(k, isQuestion(v) ? v : questionFor(v))
  return questions
}

/** A resolver that saw a declined answer ends the call with that; anything else goes on up. */
function declinedOr(err: unknown): RunResult<never> {
  if (err instanceof Declined) return { kind: 'declined', message: err.message }
  throw err
}

/** What sealed state is bound to. The argument digest is computed only here: most calls neither open nor seal. */
function sealBinding(binding: SealTarget, ctx: CallContext): SealBinding {
  return { method: binding.method, target: binding.target, args: binding.args, principal: ctx.principal.id }
}
