import { Cancel } from '../core/cancel.js'
import type { Linked } from './chain.js'

/**
 * How long an upstream request may go without a sign of life before the gateway gives it up with
 * 504 (`requestTimeoutMs`, `--timeout-ms`, `"timeoutMs"`): the SDK's own default.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

/**
 * An upstream request's deadline: `ms` of silence, counted again from each sign of life (`touch`),
 * stopped while paused (the upstream waits for an answer of ours); 0: none. Its {@link Cancel}
 * aborts when it passes, and when `parent` (the caller's signal) aborts, with the parent's reason.
 * Given the caller's own {@link Cancel} instead (a call's, which only it aborts), the deadline aborts
 * that one when it passes: nothing of its own to follow. `signal` is an AbortSignal of the same, made
 * when something needs one (fetch). `end()` when the request is over.
 */
export class Deadline implements Linked<Deadline> {
  readonly cancel: Cancel
  /** Its place among its upstream's requests in flight ({@link Chain}). */
  before: Deadline | undefined = undefined
  after: Deadline | undefined = undefined
  #timer: NodeJS.Timeout | undefined
  #fired = false
  readonly #parent: AbortSignal | undefined
  readonly #follow: (() => void) | undefined
  #signal: AbortSignal | undefined

  constructor(
    readonly ms: number,
    parent?: AbortSignal | Cancel
  ) {
    if (parent instanceof Cancel) {
      this.cancel = parent
      return
    }
    const cancel = (this.cancel = new Cancel())
    if (parent === undefined) return
    this.#parent = parent
    if (parent.aborted) cancel.abort(parent.reason as Error)
    else parent.addEventListener('abort', (this.#follow = () => cancel.abort(parent.reason as Error)), { once: true })
  }

  /** The cancellation as an AbortSignal, for an API that takes one. */
  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      const controller = new AbortController()
      this.cancel.on((reason) => controller.abort(reason))
      this.#signal = controller.signal
    }
    return this.#signal
  }

  /** Whether it passed (its own timer fired, not the caller's abort). */
  get passed(): boolean {
    return this.#fired
  }

  /** Count `ms` from now. */
  start(): void {
    clearTimeout(this.#timer)
    if (this.ms === 0) return
    this.#timer = setTimeout(() => {
      if (this.cancel.aborted) return
      this.#fired = true
      this.cancel.abort(new Error(`nothing for ${this.ms} ms`))
    }, this.ms)
  }

  /** A sign of life: the wait starts again, unless it is paused. */
  touch(): void {
    if (this.#timer !== undefined) this.start()
  }

  pause(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
  }

  /** The request is over: no timer, and no listener left on the parent. */
  end(): void {
    this.pause()
    if (this.#follow !== undefined) this.#parent!.removeEventListener('abort', this.#follow)
  }
}
