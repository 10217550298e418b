import type { RequestContext } from '../core/request-context.js'
import { isPlainObject } from '../headers.js'
import { requireCapabilities } from '../messaging/notify.js'
import type { InputRequests, InputResponses } from '../schema/mrtr.js'
import type { InputRequest } from '../schema/mrtr.js'
import type { Outcome, Question } from './questions.js'
import { askedOf, checkResponse, type Asked } from './responses.js'
import type { SealBinding, StateSealer } from './seal.js'
import { ownValue } from '../core/json-limits.js'
import { copyOf } from '../core/results.js'

/** What a handler returns to ask for input itself (see {@link inputRequired}). */
export interface HandRolledInputRequired<S = unknown> {
  resultType: 'input_required'
  /** Requests by key: questions made with elicit()/sample()/listRoots(), or raw MCP requests. */
  inputRequests?: Record<string, Question<unknown> | InputRequest>
  /** State to get back, sealed, on the retry (as `ctx.requestState`). */
  state?: S
}

/** The sealed state between rounds. */
export interface RoundState {
  /** Questions asked in the last round, by key. */
  q?: Record<string, Asked>
  /** Answered resolver questions, by resolver name: digest and outcome. */
  o?: Record<string, { h: string; r: Outcome<unknown> }>
  /** A hand-rolled handler's own state. */
  u?: unknown
}

const NO_ANSWERS: Readonly<InputResponses> = Object.freeze({})

/** Answers count only for questions this server asked (and sealed); anything else is ignored. */
export function checkAnswers(state: RoundState, responses: InputResponses | undefined): Readonly<InputResponses> {
  if (responses === undefined) return NO_ANSWERS
  const answers: InputResponses = {}
  for (const [key, response] of Object.entries(responses)) {
    const asked = ownValue(state.q, key)
    if (asked === undefined) continue
    checkResponse(`inputResponses["${key}"]`, asked, response)
    answers[key] = response
  }
  return answers
}

export function isHandRolled(v: unknown): v is HandRolledInputRequired {
  return isPlainObject(v) && v.resultType === 'input_required'
}

/** What the sealed state remembers of each question: method, digest and a form's schema. */
function askedOfAll(questions: ReadonlyMap<string, Question<unknown>>): Record<string, Asked> {
  const asked: Record<string, Asked> = {}
  for (const [key, q] of questions) asked[key] = askedOf(q.request, q.digest)
  return asked
}

/**
 * Build the `input_required` result: every request the client can answer, or 400 -32021 naming
 * what it lacks; the questions remembered in the sealed state.
 */
export function inputRequiredResult(
  sealer: StateSealer,
  binding: SealBinding,
  questions: ReadonlyMap<string, Question<unknown>>,
  carry: RoundState,
  ctx: RequestContext
): Record<string, unknown> {
  requireCapabilities(questions.values(), ctx)
  const inputRequests: InputRequests = {}
  for (const [key, q] of questions) inputRequests[key] = q.request
  const result: Record<string, unknown> = { resultType: 'input_required' }
  if (questions.size > 0) result.inputRequests = inputRequests
  result.requestState = sealer.seal(binding, withQuestions(carry, questions))
  return result
}

/** The state to seal: what `carry` keeps, and the questions asked now (not a spread: see copyOf). */
export function withQuestions(carry: RoundState, questions: ReadonlyMap<string, Question<unknown>>): RoundState {
  const state = copyOf(carry)
  state.q = askedOfAll(questions)
  return state
}
