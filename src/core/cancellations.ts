import type { Signals } from '../store/types.js'

/** What a cancellation aborts: a running call, or a task's run. */
export interface Abortable {
  abort(reason: Error): void
}

/** A registration: its work until released (see {@link Cancellations.track}), and the reason a cancel gives. */
interface Running {
  work: Abortable | undefined
  readonly reason: string
}

/**
 * Running calls and tasks by owner and id, so that `notifications/cancelled` or `tasks/cancel`,
 * published through the store by whichever instance heard it, aborts the work on the instance that
 * runs it. Listens to the store from the first registration on.
 */
export class Cancellations {
  readonly #running = new Map<string, Running>()
  #listening: (() => void) | undefined

  constructor(readonly signals: () => Signals) {}

  /**
   * Register `work` under `owner` and `id` until the returned function is called; `reason` is what
   * its abort says when the cancellation gives none.
   * @example const release = cancellations.track(ctx.principal.id, ctx.requestId, ctx)
   */
  track(owner: string, id: string, work: Abortable, reason = 'Cancelled by the client'): () => void {
    this.#listening ??= this.signals().onCancel((o, requestId, reason) => {
      const running = this.#running.get(`${o}\0${requestId}`)
      running?.work?.abort(new Error(reason ?? running.reason))
    })
    const key = `${owner}\0${id}`
    const entry: Running = { work, reason }
    this.#running.set(key, entry)
    // The entry lets go of its work as it leaves. It may outlive the registration in the old
    // generation (V8 can allocate such objects there from birth, see TaskHandle in tasks/runner.ts,
    // and keeps a Map's previous table, entries and all, until a full collection); there it kept the
    // work (a task's whole context) alive through every scavenge, to be promoted and die later.
    return () => {
      if (this.#running.get(key) === entry) this.#running.delete(key)
      entry.work = undefined
    }
  }

  /** Stop listening to the store (the server closes). */
  close(): void {
    this.#listening?.()
    this.#listening = undefined
  }
}
