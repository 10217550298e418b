import { AnswerTimeout } from './store-errors.js'
import type { ClientAnswer, Signals } from './types.js'

interface Waiter {
  resolve: (answer: ClientAnswer) => void
  reject: (err: unknown) => void
}

/**
 * Who waits for the client's answer to a server-to-client request, by `owner\0id`, and answers that
 * came before anyone waited (the client can be quicker than the handler): the waiting half of a
 * {@link MemoryStore}'s request queue.
 */
export class AnswerWaiters {
  readonly #waiters = new Map<string, Waiter>()
  readonly #early = new Map<string, ClientAnswer>()

  /** Hand `answer` to whoever waits for `key`, or keep it for the first to ask. */
  settle(key: string, answer: ClientAnswer): void {
    const waiter = this.#waiters.get(key)
    if (waiter !== undefined) waiter.resolve(answer)
    else this.#early.set(key, answer)
  }

  /** Wait for the answer to `key`; on abort or timeout, `withdraw` removes the question first. */
  wait(key: string, signal: AbortSignal, timeoutMs: number, withdraw: () => void): Promise<ClientAnswer> {
    const early = this.#early.get(key)
    if (early !== undefined) {
      this.#early.delete(key)
      return Promise.resolve(early)
    }
    return new Promise<ClientAnswer>((resolve, reject) => {
      const fail = (err: unknown) => {
        cleanup()
        withdraw()
        reject(err)
      }
      const onAbort = () => fail(signal.reason)
      const timer = setTimeout(() => fail(new AnswerTimeout(`The client did not answer within ${timeoutMs} ms`)), timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        this.#waiters.delete(key)
      }
      if (signal.aborted) return fail(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      this.#waiters.set(key, {
        resolve: (answer) => {
          cleanup()
          resolve(answer)
        },
        reject: fail
      })
    })
  }

  /** The store closes: every wait ends with an error. */
  close(): void {
    for (const w of [...this.#waiters.values()]) w.reject(new Error('The store is closing'))
    this.#early.clear()
  }
}

/** {@link Signals} within one process: listeners called at once. */
export class LocalSignals implements Signals {
  readonly #cancelListeners = new Set<(owner: string, requestId: string, reason: string | undefined) => void>()
  readonly #updateListeners = new Set<(uri: string) => void>()

  async publishCancel(owner: string, requestId: string, reason: string | undefined): Promise<void> {
    for (const l of this.#cancelListeners) l(owner, requestId, reason)
  }

  onCancel(listener: (owner: string, requestId: string, reason: string | undefined) => void): () => void {
    this.#cancelListeners.add(listener)
    return () => this.#cancelListeners.delete(listener)
  }

  async publishResourceUpdated(uri: string): Promise<void> {
    for (const l of this.#updateListeners) l(uri)
  }

  onResourceUpdated(listener: (uri: string) => void): () => void {
    this.#updateListeners.add(listener)
    return () => this.#updateListeners.delete(listener)
  }
}
