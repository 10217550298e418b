import { randomUUID } from 'node:crypto'
import type { CallContext } from '../core/call-context.js'
import type { RequestContext } from '../core/request-context.js'
import { asError, errors } from '../errors.js'
import { missingCapabilities, questionFor } from '../mrtr/questions.js'
import type { InputRequest } from '../schema/mrtr.js'
import type { ServerMessage } from '../store/types.js'
import type { Linked } from './chain.js'
import { Cancel } from '../core/cancel.js'

/** Where a round waits: the instance holding the upstream request, the call, and the round's number. */
export interface RoundRef {
  i: string
  r: string
  n: number
}

/** A wire error as it crosses between instances. */
export interface WireError {
  /** The catalogue's name (`MCP_ERR_...`), so that the error keeps it across instances. */
  name?: string
  code: number
  message: string
  status: number
  data?: unknown
  headers?: Record<string, string>
}

/** How a round of an upstream call ends: its result, questions for the client, or an error. */
export type Outcome =
  | { kind: 'done'; result: Record<string, unknown> }
  | { kind: 'ask'; requests: Record<string, ServerMessage>; ref: RoundRef }
  | { kind: 'error'; error: WireError }

/** What waiting on a call gives: an outcome, or (waiting with a limit) that it is still running. */
export type Next = Outcome | { kind: 'running' }

interface Question {
  request: ServerMessage
  resolve(result: Record<string, unknown>): void
  reject(err: Error): void
}

/**
 * One upstream request (tools/call, prompts/get, resources/read) in flight, with the questions the
 * upstream asked during it. The upstream request stays open across the client's rounds: each round
 * answers the questions asked and waits for the next ones or the result.
 */
export class UpstreamCall implements Linked<UpstreamCall> {
  readonly abort = new Cancel()
  /** Its place among the calls in flight ({@link Chain}). */
  before: UpstreamCall | undefined = undefined
  after: UpstreamCall | undefined = undefined
  #id: string | undefined = undefined
  /** Rounds handed to the client so far; a retry must name the latest. */
  round = 0
  /**
   * The request whose progress and log messages this call reports to (the latest local round's);
   * none once the call has ended (see {@link UpstreamCall.#end}).
   */
  ctx: RequestContext | undefined
  /** The principal whose call this is (rounds are bound to it). */
  readonly principal: string
  settled: { ok: true; result: Record<string, unknown> } | { ok: false; error: unknown } | undefined
  readonly #questions = new Map<string, Question>()
  #seq = 0
  #wake: (() => void) | undefined
  #expiry: NodeJS.Timeout | undefined
  /** While a round waits for the client: when it expires (the per-principal cap counts these). */
  heldUntil: number | undefined

  constructor(
    readonly instance: string,
    ctx: RequestContext,
    /** How long the client has to answer a round before the upstream is told `cancel`. */
    readonly ttlMs: number,
    readonly onEnd: (call: UpstreamCall) => void,
    /** A round is handed out (the first makes the call's id): where a retry will look for it. */
    readonly onRound?: (call: UpstreamCall) => void
  ) {
    this.ctx = ctx
    this.principal = ctx.principal.id
  }

  /** The call's name in its rounds' sealed state; made for the first round (most calls have none). */
  get id(): string {
    return (this.#id ??= randomUUID())
  }

  /**
   * The call is over: off the instance's calls, and holding its request no more. A Map keeps an
   * entry deleted from it in its previous table until the next full collection (V8 replaces the
   * table as entries come and go); that table, in the old generation, kept whatever the entry
   * reached alive through every scavenge, so each call's request (its context, its HTTP request
   * and response) was promoted: under 32 clients, 13 µs of the gateway's CPU per call was its
   * garbage collector's.
   */
  #end(): void {
    this.ctx = undefined
    this.onEnd(this)
  }

  /** Run the upstream request; `send` gets the call's {@link Cancel} (its deadline aborts it when it passes). */
  run(send: (abort: Cancel) => Promise<Record<string, unknown>>): void {
    send(this.abort).then(
      (result) => this.#settle({ ok: true, result }),
      (error: unknown) => this.#settle({ ok: false, error })
    )
  }

  #settle(s: NonNullable<UpstreamCall['settled']>): void {
    this.settled = s
    this.#poke()
  }

  #poke(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  /** An upstream server-to-client request made during this call: resolved with the client's answer. */
  ask(request: ServerMessage, signal: AbortSignal): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const key = `q${this.#seq++}`
      this.#questions.set(key, { request, resolve, reject })
      // The upstream withdrew its request (it was cancelled): nothing to ask any more.
      signal.addEventListener('abort', () => this.#questions.delete(key) && reject(asError(signal.reason)), { once: true })
      this.#poke()
    })
  }

  /** Give the upstream the client's answers to the questions of the round. */
  answer(responses: Readonly<Record<string, Record<string, unknown>>>): void {
    for (const [key, response] of Object.entries(responses)) {
      const q = this.#questions.get(key)
      if (q === undefined) continue
      this.#questions.delete(key)
      q.resolve(response)
    }
  }

  /**
   * Wait for the result or the next questions. `waiting` (the client's request that waits) cancels
   * the upstream request when it is cancelled; questions the client cannot be asked (its capabilities) end
   * the call with 400 -32021, as for our own tools. With `waitMs`, nothing after that long is
   * `running` (the call goes on; the caller may make it a task).
   */
  async next(waiting: CallContext | undefined, caps: Readonly<Record<string, unknown>> | undefined, waitMs?: number): Promise<Next> {
    clearTimeout(this.#expiry)
    this.heldUntil = undefined
    // No time at all (taskAfterMs 0): a task whatever comes first, never a race with the upstream's first question.
    if (waitMs === 0 && this.settled === undefined) return { kind: 'running' }
    const onAbort = (reason: Error) => this.abort.abort(reason)
    waiting?.onCancel(onAbort)
    let late = false
    const timer =
      waitMs === undefined
        ? undefined
        : setTimeout(() => {
          late = true
          this.#poke()
        }, waitMs)
    try {
      while (this.settled === undefined && this.#questions.size === 0 && !late) await new Promise<void>((resolve) => (this.#wake = resolve))
      // Questions asked together arrive a few ticks apart: let them join one round.
      if (this.settled === undefined) await new Promise((resolve) => setImmediate(resolve))
    } finally {
      clearTimeout(timer)
      waiting?.offCancel(onAbort)
    }
    const settled = this.settled
    if (settled !== undefined) {
      this.#end()
      if (settled.ok) return { kind: 'done', result: settled.result }
      throw settled.error
    }
    if (this.#questions.size === 0) return { kind: 'running' }
    const requests = Object.fromEntries([...this.#questions].map(([key, q]) => [key, q.request]))
    const missing = missingCapabilities(Object.values(requests).map((r) => questionFor(r as InputRequest)), caps)
    if (missing !== undefined) {
      this.cancel('The client cannot answer the upstream server\'s questions')
      throw errors.missingCapability(missing, `This request needs the client capabilities: ${Object.keys(missing).join(', ')}`)
    }
    this.round++
    this.onRound?.(this)
    this.heldUntil = Date.now() + this.ttlMs
    this.#expiry = setTimeout(() => this.cancel('The client did not answer in time'), this.ttlMs)
    this.#expiry.unref()
    return { kind: 'ask', requests, ref: { i: this.instance, r: this.id, n: this.round } }
  }

  /** Abandon the call: open elicitations are answered `cancel`, other questions fail, the request is cancelled. */
  cancel(reason: string): void {
    clearTimeout(this.#expiry)
    this.heldUntil = undefined
    for (const q of this.#questions.values()) {
      if (q.request.method === 'elicitation/create') q.resolve({ action: 'cancel' })
      else q.reject(errors.upstreamRequestRefused(reason))
    }
    this.#questions.clear()
    this.abort.abort(new Error(reason))
    this.#end()
  }
}
