/**
 * How long an upstream request may go without a sign of life before the gateway gives it up with
 * 504 (`requestTimeoutMs`, `--timeout-ms`, `"timeoutMs"`): the SDK's own default.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

// setTimeout's longest delay (about 24.8 days): the SDK's per-request timeout, which ours replaces.
export const NO_TIMEOUT = 2 ** 31 - 1

/**
 * An upstream request's deadline: `ms` of silence, counted again from each sign of life (`touch`),
 * stopped while paused (the upstream waits for an answer of ours); 0: none. `signal` aborts when it passes.
 */
export class Deadline {
  readonly #abort = new AbortController()
  #timer: NodeJS.Timeout | undefined

  constructor(readonly ms: number) {}

  get signal(): AbortSignal {
    return this.#abort.signal
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
}
