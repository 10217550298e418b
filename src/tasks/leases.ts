import type { StoreRoles } from '../store/types.js'

/**
 * The leases of the tasks this instance runs. A task is created with a lease (`leaseUntil`) and, while
 * its work runs here, renewed every third of it (one timer for all of them, not one per task); a
 * task still running when its lease lapses lost its instance and is reported failed by whichever
 * instance reads it (`lapsed` in task-steps.ts). A renewal that fails (the store is down) is tried at
 * the next tick: only an instance that cannot reach the store for a whole lease loses its tasks.
 */
export class TaskLeases {
  readonly #running = new Map<string, { owner: string; taskId: string }>()
  #timer: NodeJS.Timeout | undefined

  constructor(readonly store: () => Pick<StoreRoles, 'tasks'>, readonly leaseMs: number) {}

  /** The lease a task created or renewed now gets. */
  until(): number {
    return Date.now() + this.leaseMs
  }

  /** Renew the task's lease while it runs here; the function returned stops. */
  hold(owner: string, taskId: string): () => void {
    const key = `${owner}\0${taskId}`
    this.#running.set(key, { owner, taskId })
    // Unref'd: renewing leases is no reason to keep a process alive.
    this.#timer ??= setInterval(() => this.#renew(), Math.max(1, Math.floor(this.leaseMs / 3))).unref()
    return () => {
      this.#running.delete(key)
      if (this.#running.size === 0 && this.#timer !== undefined) {
        clearInterval(this.#timer)
        this.#timer = undefined
      }
    }
  }

  #renew(): void {
    const until = this.until()
    const store = this.store()
    for (const { owner, taskId } of this.#running.values()) store.tasks.renewTask(owner, taskId, until).catch(() => undefined)
  }
}
