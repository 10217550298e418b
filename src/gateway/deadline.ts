/**
 * How long an upstream request may go without a sign of life before the gateway gives it up with
 * 504 (`requestTimeoutMs`, `--timeout-ms`, `"timeoutMs"`): the SDK's own default.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

// setTimeout's longest delay (about 24.8 days): the SDK's per-request timeout, which ours replaces.
export const NO_TIMEOUT = 2 ** 31 - 1

/**
 * An upstream request's deadline: `ms` of silence, counted again from each sign of life (`touch`),
 * stopped while paused (the upstream waits for an answer of ours); 0: none. `signal` aborts when it
 * passes, and when `parent` (the caller's signal) aborts, with the parent's reason: one signal for the
 * request, where `AbortSignal.any` would make a third per request and keep it for the garbage
 * collector's finalization (a profile of the gateway under load: ~6% of its CPU, and more GC).
 * `end()` when the request is over.
 */
export class Deadline {
  readonly #abort = new AbortController()
  #timer: NodeJS.Timeout | undefined
  readonly #parent: AbortSignal | undefined
  readonly #follow: (() => void) | undefined

  constructor(
    readonly ms: number,
    parent?: AbortSignal
  ) {
    if (parent === undefined) return
    this.#parent = parent
    if (parent.aborted) this.#abort.abort(parent.reason)
    else parent.addEventListener('abort', (this.#follow = () => this.#abort.abort(parent.reason)), { once: true })
  }

  get signal(): AbortSignal {
    return this.#abort.signal
  }

  /** Whether it passed (its own timer fired, not the parent's abort). */
  get passed(): boolean {
    return this.#abort.signal.aborted && this.#parent?.aborted !== true
  }

  /** Count `ms` from now. */
  start(): void {
    clearTimeout(this.#timer)
    if (this.ms === 0) return
    this.#timer = setTimeout(() => this.#abort.abort(new Error(`nothing for ${this.ms} ms`)), this.ms)
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
