/** What a cancellation tells: whether it happened, and why (an AbortSignal is one, and so is a {@link Cancel}). */
export interface Cancellation {
  readonly aborted: boolean
  readonly reason: unknown
}

/**
 * A cancellation, as an AbortController is one, without the EventTarget: an AbortController whose
 * signal has a listener costs ~3 µs and ~1 KB of garbage, and the gateway made two on every call (a
 * call's own, and its caller's signal: see `CallContext.onCancel`). Listeners run once, in order;
 * one added after the abort runs at once.
 */
export class Cancel implements Cancellation {
  reason: Error | undefined = undefined
  #listeners: ((reason: Error) => void)[] = []

  get aborted(): boolean {
    return this.reason !== undefined
  }

  abort(reason: Error): void {
    if (this.reason !== undefined) return
    this.reason = reason
    const listeners = this.#listeners
    this.#listeners = []
    for (const listener of listeners) listener(reason)
  }

  on(listener: (reason: Error) => void): void {
    if (this.reason !== undefined) listener(this.reason)
    else this.#listeners.push(listener)
  }

  off(listener: (reason: Error) => void): void {
    const i = this.#listeners.indexOf(listener)
    if (i !== -1) this.#listeners.splice(i, 1)
  }
}
