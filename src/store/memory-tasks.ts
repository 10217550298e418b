import { TooManyTasks } from './store-errors.js'
import { TERMINAL, type StoreLimits, type TaskRecord, type TaskStore } from './types.js'

interface StoredTask {
  record: TaskRecord
  expiresAt: number
  /** Answers not yet taken by the runner. */
  answers: Map<string, Record<string, unknown>>
  wake?: () => void
  /**
   * What a read hands out until the next change: one deep copy per version, frozen, shared by every
   * read (a task polled a thousand times is copied once, not a thousand times).
   */
  view?: TaskRecord
}

/** The tasks of a {@link MemoryStore}: records with their expiry, and answers not yet taken. */
export class MemoryTasks implements TaskStore {
  readonly #tasks = new Map<string, StoredTask>()
  #nextTaskSweep = 0

  constructor(readonly limits: Pick<StoreLimits, 'maxTasks'>) {}

  async createTask(owner: string, task: TaskRecord): Promise<void> {
    const now = Date.now()
    // Expired tasks are swept at most once a second, or when the map is full: a sweep on every
    // create made creating a task cost as much as walking every task kept (~150 µs at a few thousand).
    if (now >= this.#nextTaskSweep || this.#tasks.size >= this.limits.maxTasks) {
      this.#nextTaskSweep = now + 1000
      for (const [key, t] of this.#tasks) if (t.expiresAt <= now) this.#tasks.delete(key)
    }
    if (this.#tasks.size >= this.limits.maxTasks) {
      throw new TooManyTasks(this.limits.maxTasks)
    }
    this.#tasks.set(`${owner}\0${task.taskId}`, { record: copy(task), expiresAt: now + task.ttlMs, answers: new Map() })
  }

  async getTask(owner: string, taskId: string): Promise<TaskRecord | undefined> {
    const t = this.#get(owner, taskId)
    return t === undefined ? undefined : (t.view ??= frozen(copy(t.record)))
  }

  async updateTask(owner: string, taskId: string, patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>): Promise<TaskRecord | undefined> {
    const t = this.#get(owner, taskId)
    if (t === undefined || TERMINAL.has(t.record.status)) return undefined
    Object.assign(t.record, copy(patch), { lastUpdatedAt: new Date().toISOString() })
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete t.record[k as keyof TaskRecord]
    t.view = undefined
    return copy(t.record)
  }

  async answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined> {
    const t = this.#get(owner, taskId)
    if (t === undefined) return undefined
    const outstanding = t.record.inputRequests ?? {}
    const taken = Object.keys(responses).filter((k) => Object.hasOwn(outstanding, k))
    if (taken.length === 0) return taken
    for (const k of taken) {
      t.answers.set(k, responses[k]!)
      delete outstanding[k]
    }
    t.view = undefined
    const remaining = Object.keys(outstanding).length
    const patch: Partial<TaskRecord> = remaining === 0 ? { status: 'working', inputRequests: undefined } : { inputRequests: outstanding }
    await this.updateTask(owner, taskId, patch)
    t.wake?.()
    return taken
  }

  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const t = this.#get(owner, taskId)
        if (t === undefined) return finish(new Error('The task is gone'))
        if (!keys.every((k) => t.answers.has(k))) return
        const out: Record<string, Record<string, unknown>> = {}
        for (const k of keys) {
          out[k] = t.answers.get(k)!
          t.answers.delete(k)
        }
        finish(undefined, out)
      }
      const onAbort = () => finish(signal.reason)
      const finish = (err: unknown, out?: Record<string, Record<string, unknown>>) => {
        signal.removeEventListener('abort', onAbort)
        const t = this.#get(owner, taskId)
        if (t !== undefined) t.wake = undefined
        if (err === undefined) resolve(out!)
        else reject(err)
      }
      if (signal.aborted) return reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      const t = this.#get(owner, taskId)
      if (t !== undefined) t.wake = check
      check()
    })
  }

  #get(owner: string, taskId: string): StoredTask | undefined {
    const key = `${owner}\0${taskId}`
    const t = this.#tasks.get(key)
    if (t !== undefined && t.expiresAt <= Date.now()) {
      this.#tasks.delete(key)
      return undefined
    }
    return t
  }

  clear(): void {
    this.#tasks.clear()
  }
}

/**
 * A deep copy of a task record or patch (the store never shares its objects with callers, as Redis
 * would not): plain objects and arrays are copied, anything else is kept as it is. structuredClone
 * did the same for ~2 µs a call, four calls a task.
 */
function copy<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copy) as T
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = copy(v)
  return out as T
}

/** `value` and every plain object and array in it frozen: a view readers share cannot be changed by one of them. */
function frozen<T>(value: T): T {
  if (value !== null && typeof value === 'object' && (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype)) {
    for (const v of Object.values(value)) frozen(v)
    Object.freeze(value)
  }
  return value
}
