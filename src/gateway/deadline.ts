/**
 * How long an upstream request may go without a sign of life before the gateway gives it up with
 * 504 (`requestTimeoutMs`, `--timeout-ms`, `"timeoutMs"`): the SDK's own default.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

/**
 * An upstream request's deadline: `ms` of silence, counted again from each sign of life (`touch`),
 * stopped while paused (the upstream waits for an answer of ours); 0: none. `signal` aborts when it
 * passes, and when `parent` (the caller's signal) aborts, with the parent's reason: one signal for the
 * request, where `AbortSignal.any` would make a third per request and keep it for the garbage
 * collector's finalization (a profile of the gateway under load: ~6% of its CPU, and more GC).
 * Given the caller's AbortController instead (a call's own, which only it aborts), the deadline
 * aborts that one when it passes: no signal nor listener of its own (an AbortSignal is about 1 KB
 * of garbage per request). `end()` when the request is over.
 */
export class Deadline {
  readonly #abort: AbortController
  #timer: NodeJS.Timeout | undefined
  #fired = false
  readonly #parent: AbortSignal | undefined
  readonly #follow: (() => void) | undefined

  constructor(
    readonly ms: number,
    parent?: AbortSignal | AbortController
  ) {
    if (parent instanceof AbortController) {
      this.#abort = parent
      return
    }
    this.#abort = new AbortController()
    if (parent === undefined) return
    this.#parent = parent
    if (parent.aborted) this.#abort.abort(parent.reason)
    else parent.addEventListener('abort', (this.#follow = () => this.#abort.abort(parent.reason)), { once: true })
  }

  get signal(): AbortSignal {
    return this.#abort.signal
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
      if (this.#abort.signal.aborted) return
      this.#fired = true
      this.#abort.abort(new Error(`nothing for ${this.ms} ms`))
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
