import type { Logger } from '../core/request-context.js'
import type { StoreRoles } from '../store/types.js'
import { recoverLapsed } from './task-steps.js'

/** Lapsed tasks one sweep takes at most (the next sweep takes more). */
const SWEEP_BATCH = 100

/**
 * The leases of the tasks this instance runs, and the sweep for tasks whose instance died. A task is
 * created with a lease (`leaseUntil`) and, while its work runs here (and until its end's notification
 * is queued), renewed every third of it (one timer for all of them, not one per task); a task whose
 * lease lapsed lost its instance. A renewal that fails (the store is down) is tried at the next
 * tick: only an instance that cannot reach the store for a whole lease loses its tasks.
 *
 * A lapsed task is recovered (`recoverLapsed`: failed, and its end notified) by whichever instance
 * reads it first, or by the sweep every instance runs every third of a lease once serving: a client
 * that waits for notifications and never polls still hears of it.
 */
export class TaskLeases {
  readonly #running = new Map<string, { owner: string; taskId: string }>()
  #timer: NodeJS.Timeout | undefined
  #sweeper: NodeJS.Timeout | undefined
  #sweeping: Promise<void> | undefined

  constructor(readonly store: () => Pick<StoreRoles, 'tasks' | 'mailbox'>, readonly leaseMs: number) {}

  /** The lease a task created or renewed now gets. */
  until(): number {
    return Date.now() + this.leaseMs
  }

  /** Renew the task's lease while it runs here; the function returned stops. */
  hold(owner: string, taskId: string): () => void {
    const key = `${owner}\0${taskId}`
    this.#running.set(key, { owner, taskId })
    // Unref'd: renewing leases is no reason to keep a process alive.
    this.#timer ??= setInterval(() => this.#renew(), this.#period()).unref()
    return () => {
      this.#running.delete(key)
      if (this.#running.size === 0 && this.#timer !== undefined) {
        clearInterval(this.#timer)
        this.#timer = undefined
      }
    }
  }

  /** Sweep for lapsed tasks every third of a lease until {@link stopSweeping}. */
  startSweeping(log: Logger): void {
    this.#sweeper ??= setInterval(() => {
      this.#sweeping ??= this.sweep().then(
        () => undefined,
        (err: unknown) => log.warn({ err }, 'tasks: could not recover the tasks of a stopped instance; trying again at the next sweep')
      ).finally(() => (this.#sweeping = undefined))
    }, this.#period()).unref()
  }

  /** Stop sweeping; resolves once a sweep under way is done. */
  async stopSweeping(): Promise<void> {
    clearInterval(this.#sweeper)
    this.#sweeper = undefined
    await this.#sweeping
  }

  /** One sweep: recover up to {@link SWEEP_BATCH} tasks whose lease lapsed. */
  async sweep(): Promise<void> {
    const store = this.store()
    for (const { owner, taskId } of await store.tasks.lapsedTasks(Date.now(), SWEEP_BATCH)) await recoverLapsed(store, this, owner, taskId)
  }

  #period(): number {
    return Math.max(1, Math.floor(this.leaseMs / 3))
  }

  #renew(): void {
    const until = this.until()
    const store = this.store()
    for (const { owner, taskId } of this.#running.values()) store.tasks.renewTask(owner, taskId, until).catch(() => undefined)
  }
}
