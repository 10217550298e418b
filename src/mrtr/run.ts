import type { ValidateFunction } from 'ajv'
import type { RequestContext } from '../core/context.js'
import { ConfigurationError, errors } from '../errors.js'
import { isPlainObject } from '../headers.js'
import type { InputRequest, InputRequests, InputResponses } from '../schema/mrtr.js'
import { clientCan, isQuestion, questionFor, type Outcome, type Question } from './questions.js'
import { Declined, runPlan, type Plan } from './resolvers.js'
import { checkResponse, type Asked } from './responses.js'
import type { SealBinding, StateSealer } from './seal.js'

/** What a handler returns to ask for input itself (see {@link inputRequired}). */
export interface HandRolledInputRequired<S = unknown> {
  resultType: 'input_required'
  /** Requests by key: questions made with elicit()/sample()/listRoots(), or raw MCP requests. */
  inputRequests?: Record<string, Question<unknown> | InputRequest>
  /** State to get back, sealed, on the retry (as `ctx.requestState`). */
  state?: S
}

/**
 * Answer `input_required` from a hand-rolled handler. Keys must stay stable across rounds: the
 * retry's `ctx.inputResponses` uses them.
 * @example return inputRequired({ inputRequests: { city: elicit('Which city?', City) }, state: { step: 2 } })
 */
export function inputRequired<S>(r: Omit<HandRolledInputRequired<S>, 'resultType'>): HandRolledInputRequired<S> {
  return { resultType: 'input_required', ...r }
}

/** The sealed state between rounds. */
interface RoundState {
  /** Questions asked in the last round, by key. */
  q?: Record<string, Asked>
  /** Answered resolver questions, by resolver name: digest and outcome. */
  o?: Record<string, { h: string; r: Outcome<unknown> }>
  /** A hand-rolled handler's own state. */
  u?: unknown
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

/** The context a retryable handler sees. */
export interface RetryContext extends RequestContext {
  readonly inputResponses: InputResponses | undefined
  readonly requestState: unknown
  readonly resolved: Record<string, unknown>
}

export type RunResult<T> =
  | { kind: 'done'; value: T }
  | { kind: 'input_required'; result: Record<string, unknown> }
  | { kind: 'declined'; message: string }

/**
 * One round of a request that may be retried with input (SEP-2322): open and check the sealed
 * state, check the answers against what was asked, run the resolvers, then the handler. A round that
 * still needs input answers `input_required` with newly sealed state; any instance can take the next.
 */
export async function runRound<T>(
  sealer: StateSealer,
  spec: MrtrSpec,
  binding: Omit<SealBinding, 'principal'>,
  args: Record<string, unknown>,
  params: RetryParams,
  ctx: RequestContext,
  invoke: (ctx: RetryContext) => Promise<T | HandRolledInputRequired>
): Promise<RunResult<T>> {
  const bound: SealBinding = { ...binding, principal: ctx.principal.id }
  let state: RoundState = {}
  if (params.requestState !== undefined) {
    const opened = sealer.open(params.requestState, bound, ctx.log)
    if (!isPlainObject(opened)) throw errors.invalidParams('Invalid or expired requestState')
    state = opened as RoundState
  }
  // Answers count only for questions this server asked (and sealed); anything else is ignored.
  const answers: InputResponses = {}
  for (const [key, response] of Object.entries(params.inputResponses ?? {})) {
    const asked = state.q?.[key]
    if (asked === undefined) continue
    checkResponse(key, asked, response)
    answers[key] = response
  }
  if (state.u !== undefined && spec.validateState !== undefined && !spec.validateState(state.u)) {
    ctx.log.warn({ target: binding.target }, 'requestState does not match the state schema (another version of the code?)')
    throw errors.invalidParams('Invalid or expired requestState')
  }

  let resolved: Record<string, unknown> = {}
  if (spec.plan !== undefined) {
    const recorded = { ...state.o }
    let resolution
    try {
      resolution = await runPlan(spec.plan, args, ctx, (name, q) => {
        const prior = recorded[name]
        if (prior !== undefined && prior.h === q.digest) return prior.r
        if (answers[name] !== undefined && state.q?.[name]?.h === q.digest) {
          const outcome = toOutcome(q, answers[name]!)
          recorded[name] = { h: q.digest, r: outcome }
          return outcome
        }
        return undefined
      })
    } catch (err) {
      if (err instanceof Declined) return { kind: 'declined', message: err.message }
      throw err
    }
    if (resolution.values === undefined) {
      return { kind: 'input_required', result: ask(sealer, bound, resolution.pending, { o: recorded }, ctx) }
    }
    resolved = resolution.values
  }

  const handlerCtx = Object.assign(Object.create(ctx) as RequestContext, {
    inputResponses: params.inputResponses === undefined ? undefined : answers,
    requestState: state.u,
    resolved
  }) as RetryContext
  const out = await invoke(handlerCtx)
  if (!isHandRolled(out)) return { kind: 'done', value: out }
  if (spec.plan !== undefined) throw new ConfigurationError(`${binding.target}: a handler with resolvers returned input_required`)
  const questions = new Map<string, Question<unknown> | InputRequest>(Object.entries(out.inputRequests ?? {}))
  if (questions.size === 0 && out.state === undefined) throw new ConfigurationError(`${binding.target}: input_required needs inputRequests or state`)
  return { kind: 'input_required', result: ask(sealer, bound, questions, out.state === undefined ? {} : { u: out.state }, ctx) }
}

function isHandRolled(v: unknown): v is HandRolledInputRequired {
  return isPlainObject(v) && v.resultType === 'input_required'
}

/**
 * Build the `input_required` result: every request the client can answer, or 400 -32021 naming
 * what it lacks; the questions remembered (method, digest, form schema) in the sealed state.
 */
function ask(
  sealer: StateSealer,
  binding: SealBinding,
  questions: Map<string, Question<unknown> | InputRequest>,
  carry: RoundState,
  ctx: RequestContext
): Record<string, unknown> {
  if (ctx.era === 'legacy') {
    // Legacy-era clients get these through server-to-client requests (/requests), not MRTR.
    throw errors.missingCapability({}, 'This request needs multi round-trip support (protocol 2026-07-28)')
  }
  const inputRequests: InputRequests = {}
  const asked: Record<string, Asked> = {}
  const missing: Record<string, unknown> = {}
  for (const [key, item] of questions) {
    const q = isQuestion(item) ? item : questionFor(item)
    if (!clientCan(q, ctx.clientCapabilities)) {
      const { name, sub } = q.capability
      missing[name] = sub === undefined ? { ...(missing[name] as object) } : { ...(missing[name] as object), [sub]: {} }
    }
    inputRequests[key] = q.request
    const a: Asked = { m: q.request.method, h: q.digest }
    const schema = (q.request.params as { mode?: string; requestedSchema?: Record<string, unknown> } | undefined)
    if (q.request.method === 'elicitation/create' && schema?.mode !== 'url' && schema?.requestedSchema !== undefined) {
      a.s = schema.requestedSchema
    }
    asked[key] = a
  }
  if (Object.keys(missing).length > 0) {
    throw errors.missingCapability(missing, `This request needs the client capabilities: ${Object.keys(missing).join(', ')}`)
  }
  const result: Record<string, unknown> = { resultType: 'input_required' }
  if (questions.size > 0) result.inputRequests = inputRequests
  result.requestState = sealer.seal(binding, { ...carry, q: asked } satisfies RoundState)
  return result
}

/** An answer as the asker sees it: elicitations keep their action; sampling and roots are accepted. */
function toOutcome(q: Question<unknown>, response: Record<string, unknown>): Outcome<unknown> {
  switch (q.request.method) {
    case 'elicitation/create': {
      const action = response.action as Outcome<unknown>['action']
      if (action !== 'accept') return { action }
      const url = (q.request.params as { mode?: string }).mode === 'url'
      return { action, content: url ? true : (response.content ?? {}) }
    }
    case 'roots/list':
      return { action: 'accept', content: response.roots }
    default:
      return { action: 'accept', content: response }
  }
}
