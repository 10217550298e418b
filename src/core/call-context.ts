import type { AnySchema } from './standard-schema.js'
import { Cancel } from './cancel.js'
import { MetaKey, type Era, type ProtocolVersion } from '../protocol.js'
import type { Meta } from '../schema/common.js'
import { admitsLog, type LoggingLevel } from '../schema/lifecycle.js'
import type { InputResponses } from '../schema/mrtr.js'
import { elicit, listRoots, sample, type Outcome, type Question, type Root, type SampledMessage } from '../mrtr/questions.js'
import type { ServerMessage } from '../store/records.js'
import type { Logger, Principal, RequestContext } from './request-context.js'

const NO_VALUES: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>

/**
 * Where a request's notifications go, and which of them the client takes: the connection's queue
 * (`GET /notifications`), the SSE stream of a streamed Pure HTTP call, or the response stream of a
 * JSON-RPC POST. The face picks one; the context builds every message itself (see {@link CallContext}).
 */
export interface Outlet {
  /** The token `notifications/progress` carries; undefined: the client asked for no progress. */
  progressToken(ctx: CallContext): string | number | undefined
  /** The lowest level of `notifications/message` the client takes; undefined: none. */
  logFloor(ctx: CallContext): unknown
  send(ctx: CallContext, message: ServerMessage): void | Promise<void>
  /** Legacy era: where a server-to-client request is written besides `/requests` (a JSON-RPC stream). */
  readonly deliverRequest?: ((id: string, request: ServerMessage) => void) | undefined
}

/** What a face knows of a request when it hands it to the core: the context's own fields, as it declares them. */
export interface CallInit extends Pick<RequestContext, 'requestId' | 'protocolVersion' | 'era' | 'meta' | 'clientCapabilities' | 'principal' | 'log' | 'deadline'> {
  /** Called when the signal is first needed: tie it to the transport (the client went away). */
  readonly watch?: ((abort: (reason: Error) => void) => void) | undefined
}

/** How the current round answers a question (MRTR, the legacy queue, or a task's input requests). */
export type Asker = (q: Question<unknown>) => Promise<Outcome<unknown>>

const noAsker: Asker = () => Promise.reject(new Error('This context cannot ask the client'))

/**
 * The one context of a call, built once by the face and handed to the core, which fills in what each
 * round adds (answers, state, resolved values, how to ask) before it runs the handler. Every handler
 * kind sees this object as its `ctx`; a task runs with a {@link CallContext} of its own (see
 * TaskCallContext in tasks/runner.ts). Every field is set in the constructor, so all contexts share one V8 shape.
 */
export class CallContext implements RequestContext {
  readonly requestId: string
  readonly protocolVersion: ProtocolVersion
  readonly era: Era
  readonly meta: Meta | undefined
  /** The faces may narrow this before the call (a JSON-RPC client that cannot be asked). */
  clientCapabilities: Readonly<Record<string, unknown>> | undefined
  readonly principal: Principal
  readonly log: Logger
  deadline: number
  outlet: Outlet
  /** Per round (SEP-2322): the checked answers to this server's questions, the opened state, the resolvers' values. */
  inputResponses: InputResponses | undefined = undefined
  requestState: unknown = undefined
  resolved: Record<string, unknown> = NO_VALUES
  /** Where a resumed request picks up (resume tokens). */
  resumed: unknown = undefined
  /** tools/call: the task the client asked for (`params.task`), for a handler that starts one itself (the gateway). */
  requestedTask: { readonly ttl?: number | undefined; readonly notify?: boolean | undefined } | undefined = undefined
  /** completion/complete: the other arguments already given. */
  arguments: Readonly<Record<string, string>> = NO_VALUES as Record<string, string>
  ask: Asker = noAsker
  #controller: AbortController | undefined = undefined
  /** Made by the first abort or listener (see {@link onCancel}); most calls have neither. */
  #cancel: Cancel | undefined = undefined
  #watching = false
  readonly #watch: CallInit['watch']

  /**
   * Itself: a built context is the `At` a face hands a method's core call (src/methods.ts), with no
   * object made for it on the hot path.
   */
  context(): this {
    return this
  }

  constructor(init: CallInit, outlet: Outlet) {
    this.requestId = init.requestId
    this.protocolVersion = init.protocolVersion
    this.era = init.era
    this.meta = init.meta
    this.clientCapabilities = init.clientCapabilities
    this.principal = init.principal
    this.log = init.log
    this.deadline = init.deadline
    this.#watch = init.watch
    this.outlet = outlet
  }

  // Created on first use (an AbortController and its close listener are not free, and most handlers
  // never look), already aborted when a cancellation came first.
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = (this.#controller = new AbortController())
      if (this.#cancel?.reason !== undefined) controller.abort(this.#cancel.reason)
      else this.#watchTransport()
    }
    return this.#controller.signal
  }

  /** Whether the call was cancelled (its client went away, notifications/cancelled, tasks/cancel), as far as anyone looked. */
  get cancelled(): boolean {
    return this.#cancel?.aborted === true
  }

  /** Abort the call (notifications/cancelled, tasks/cancel); a signal read later is already aborted. */
  abort(reason: Error): void {
    const cancel = (this.#cancel ??= new Cancel())
    if (cancel.aborted) return
    this.#controller?.abort(reason)
    cancel.abort(reason)
  }

  /**
   * Hear of the call's cancellation as `signal` tells it, without making the signal: an
   * AbortController whose signal has a listener costs ~3 µs and ~1 KB of garbage, which the
   * gateway paid on every call. Already cancelled: `listener` runs at once. {@link offCancel} stops.
   */
  onCancel(listener: (reason: Error) => void): void {
    const cancel = (this.#cancel ??= new Cancel())
    if (!cancel.aborted) this.#watchTransport()
    cancel.on(listener)
  }

  offCancel(listener: (reason: Error) => void): void {
    this.#cancel?.off(listener)
  }

  // The transport is watched once someone listens (see CallInit.watch).
  #watchTransport(): void {
    if (this.#watching) return
    this.#watching = true
    this.#watch?.((reason) => this.abort(reason))
  }

  get deliverRequest(): ((id: string, request: ServerMessage) => void) | undefined {
    return this.outlet.deliverRequest
  }

  /** `notifications/progress`, when the client asked for it; else nothing. */
  async progress(progress: number, total?: number, message?: string): Promise<void> {
    const progressToken = this.outlet.progressToken(this)
    if (progressToken === undefined) return
    const params: Record<string, unknown> = { progressToken, progress }
    if (total !== undefined) params.total = total
    if (message !== undefined) params.message = message
    await this.outlet.send(this, { method: 'notifications/progress', params })
  }

  /** `notifications/message`, when the client's level lets it through. */
  async sendLog(level: LoggingLevel, data: unknown, logger?: string): Promise<void> {
    const min = await this.outlet.logFloor(this)
    if (!admitsLog(typeof min === 'string' ? min : undefined, level)) return
    const params: Record<string, unknown> = { level, data }
    if (logger !== undefined) params.logger = logger
    await this.outlet.send(this, { method: 'notifications/message', params })
  }

  elicit(message: string, schema: AnySchema): Promise<Outcome<any>> {
    return this.ask(elicit(message, schema))
  }

  async sample(p: Parameters<typeof sample>[0]): Promise<SampledMessage> {
    return ((await this.ask(sample(p))) as { content: SampledMessage }).content
  }

  async listRoots(): Promise<Root[]> {
    return ((await this.ask(listRoots())) as { content: Root[] }).content
  }
}

/** The request's own progress token (`_meta.progressToken`), when it is one. */
export function metaProgressToken(ctx: CallContext): string | number | undefined {
  const token = ctx.meta?.[MetaKey.progressToken]
  return typeof token === 'string' || typeof token === 'number' ? token : undefined
}
