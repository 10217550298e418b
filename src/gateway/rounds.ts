import type { CallContext } from '../core/call-context.js'
import type { Cancel } from '../core/cancel.js'
import type { Logger, RequestContext } from '../core/request-context.js'
import { McpError, errors, messageOf } from '../errors.js'
import type { ServerMessage } from '../store/types.js'
import { UpstreamCall, type Outcome, type RoundRef, type WireError } from './call.js'
import { Chain } from './chain.js'
import { tooManyRounds } from './errors.js'
import type { RelayedRound, RoundRelay } from './relay.js'

/**
 * The upstream calls in flight on this instance, and the rounds their questions make. A round that
 * the load balancer sends to another instance comes here through the {@link RoundRelay}: the
 * upstream request lives where it was made.
 */
export class Rounds {
  /** The calls in flight, oldest first. */
  readonly #calls = new Chain<UpstreamCall>()
  /** The calls that have handed out a round, by id: where a retry finds its call. */
  readonly #held = new Map<string, UpstreamCall>()
  #stop: (() => Promise<void>) | undefined
  /** A call's end and its rounds, as its {@link UpstreamCall} reports them. */
  readonly #ended = (call: UpstreamCall): void => {
    this.#calls.delete(call)
    if (call.round > 0) this.#held.delete(call.id)
  }

  readonly #rounded = (call: UpstreamCall): void => {
    this.#held.set(call.id, call)
  }

  constructor(
    /** This instance's name in sealed states and on the relay. */
    readonly instance: string,
    readonly relay: RoundRelay,
    readonly ttlMs: number,
    readonly log: Logger,
    /** How many rounds one principal may hold open (each an upstream request waiting for its answer). */
    readonly maxHeld: number
  ) {}

  /** Take the rounds other instances relay here. */
  async listen(): Promise<void> {
    this.#stop = await this.relay.serve(this.instance, (m) => this.#local(m, undefined))
  }

  /**
   * Start an upstream request for `ctx` and run it to its first outcome (result or questions); with
   * `waitMs`, `running` (with the call) when there is none by then. A first round past the
   * principal's cap of open rounds ends the call: 429, `Retry-After` when the first of theirs expires.
   */
  async start(
    ctx: CallContext,
    send: (abort: Cancel, call: UpstreamCall) => Promise<Record<string, unknown>>,
    waitMs?: number
  ): Promise<Outcome | { kind: 'running'; call: UpstreamCall }> {
    const call = new UpstreamCall(this.instance, ctx, this.ttlMs, this.#ended, this.#rounded)
    this.#calls.add(call)
    call.run((abort) => send(abort, call))
    const next = await call.next(ctx, ctx.clientCapabilities, waitMs)
    if (next.kind === 'running') return { kind: 'running', call }
    if (next.kind === 'ask') {
      const held = [...this.#held.values()].filter((c) => c !== call && c.principal === call.principal && c.heldUntil !== undefined)
      if (held.length >= this.maxHeld) {
        call.cancel('Too many open rounds')
        throw tooManyRounds(this.maxHeld, Math.min(...held.map((c) => c.heldUntil!)))
      }
    }
    return next
  }

  /** A retry: answer the round's questions where its call waits (here or, relayed, elsewhere) and run on. */
  async resume(ref: RoundRef, responses: Record<string, Record<string, unknown>>, ctx: CallContext): Promise<Outcome> {
    const message: RelayedRound = { ref, responses, caps: ctx.clientCapabilities, principal: ctx.principal.id }
    if (ref.i === this.instance) return this.#local(message, ctx)
    let outcome: Outcome
    try {
      outcome = await this.relay.send(ref.i, message, ctx.signal)
    } catch (err) {
      ctx.log.warn({ err, instance: ref.i }, 'gateway round could not be relayed to the instance holding it')
      throw err instanceof McpError ? err : errors.invalidParams('Invalid or expired requestState')
    }
    if (outcome.kind === 'error') {
      const e = outcome.error
      throw errors.relayed(e)
    }
    return outcome
  }

  async #local(m: RelayedRound, ctx: CallContext | undefined): Promise<Outcome> {
    const call = this.#held.get(m.ref.r)
    // The state is sealed for its principal; a call that ended, or an older round, is gone.
    if (call === undefined || call.round !== m.ref.n || call.principal !== m.principal) {
      this.log.warn({ call: m.ref.r, round: m.ref.n }, 'gateway round unknown here (ended, expired or answered already)')
      throw errors.invalidParams('Invalid or expired requestState')
    }
    if (ctx !== undefined) call.ctx = ctx
    call.answer(m.responses)
    try {
      // Without a limit: an outcome, never `running`.
      return (await call.next(ctx, m.caps)) as Outcome
    } catch (err) {
      // Relayed: the error crosses to the asking instance as data.
      if (ctx === undefined) return { kind: 'error', error: toWire(err) }
      throw err
    }
  }

  /**
   * An upstream server-to-client request: it belongs to the call in flight. An upstream's request
   * names no request of ours, so with calls of several principals in flight it cannot be told whose
   * it is, and is refused rather than shown to the wrong user. `roots/list` too: roots are a client's,
   * and the gateway has none of its own, so outside a call (at start, on a timer) it is refused, never
   * answered with an empty list that the upstream would keep as the truth; a server that asks again
   * during a call (server-everything's `get-roots-list` does) gets the caller's. A caller that
   * declared no roots answers as such a client would: -32601.
   */
  asked(request: ServerMessage, signal: AbortSignal): Promise<Record<string, unknown>> {
    const running = [...this.#calls].filter((c) => c.settled === undefined)
    const principals = new Set(running.map((c) => c.principal))
    const call = principals.size === 1 ? running.at(-1)! : undefined
    if (request.method === 'roots/list' && call !== undefined && call.ctx!.clientCapabilities?.roots === undefined) {
      return Promise.reject(errors.methodNotFound('The client offers no roots (it did not declare the roots capability)'))
    }
    if (call !== undefined) return call.ask(request, signal)
    this.log.warn({ method: request.method, callsInFlight: running.length }, 'upstream request outside a single caller\'s calls refused')
    return Promise.reject(
      errors.upstreamRequestRefused(running.length === 0 ? `${request.method} outside a request` : `${request.method}: the gateway cannot tell which caller this is for`)
    )
  }

  /** The request whose caller hears the upstream's log messages now: the single caller in flight, if one. */
  callers(): RequestContext[] {
    const running = [...this.#calls].filter((c) => c.settled === undefined)
    return new Set(running.map((c) => c.principal)).size === 1 ? [running.at(-1)!.ctx!] : []
  }

  /** Whether no call is in flight (a message of the upstream's then belongs to none). */
  idle(): boolean {
    for (const c of this.#calls) if (c.settled === undefined) return false
    return true
  }

  /** Stop taking relayed rounds; every call still waiting is cancelled. */
  async close(): Promise<void> {
    await this.#stop?.()
    for (const call of [...this.#calls]) call.cancel('The gateway is shutting down')
  }
}

export function toWire(err: unknown): WireError {
  if (err instanceof McpError) {
    const wire: WireError = { name: err.name, code: err.code, message: err.message, status: err.status }
    if (err.data !== undefined) wire.data = err.data
    if (err.headers !== undefined) wire.headers = err.headers
    return wire
  }
  return { name: 'MCP_ERR_UPSTREAM_FAILED', code: -32603, message: messageOf(err), status: 502 }
}
