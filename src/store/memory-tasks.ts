import { QuotaExceeded, StoreFull, TooManyTasks, type StoreLimitError } from './store-errors.js'
import { RECORD_OVERHEAD, msUntil } from './limits.js'
import { TERMINAL, type StoreLimits, type TaskRecord, type TaskStore } from './types.js'

type Limits = Pick<StoreLimits, 'maxTasks' | 'maxTasksPerPrincipal' | 'maxTaskBytes' | 'maxTaskBytesPerPrincipal'>

/** Tasks running, and bytes of all tasks kept, of one owner or of everyone. */
interface Usage {
  running: number
  bytes: number
}

interface StoredTask {
  owner: string
  record: TaskRecord
  expiresAt: number
  /** What it counts against the byte bounds: its JSON text at creation, its outcome's once finished. */
  bytes: number
  /** Answers not yet taken by the runner. */
  answers: Map<string, Record<string, unknown>>
  wake?: () => void
  /**
   * What a read hands out until the next change: one deep copy per version, frozen, shared by every
   * read (a task polled a thousand times is copied once, not a thousand times).
   */
  view?: TaskRecord
}

/**
 * The tasks of a {@link MemoryStore}: records with their expiry, and answers not yet taken. Running
 * tasks are bounded by count (in all and per owner); every task kept, finished ones with their
 * results, by bytes (in all and per owner).
 */
export class MemoryTasks implements TaskStore {
  readonly #tasks = new Map<string, StoredTask>()
  readonly #usage = new Map<string, Usage>()
  readonly #total: Usage = { running: 0, bytes: 0 }
  #nextTaskSweep = 0

  constructor(readonly limits: Limits) {}

  async createTask(owner: string, task: TaskRecord): Promise<void> {
    const now = Date.now()
    // Expired tasks are swept at most once a second, or when a bound is reached: a sweep on every
    // create made creating a task cost as much as walking every task kept (~150 µs at a few thousand).
    const bytes = RECORD_OVERHEAD + JSON.stringify(task).length
    if (now >= this.#nextTaskSweep || this.#refusal(owner, bytes, now) !== undefined) {
      this.#nextTaskSweep = now + 1000
      for (const [key, t] of this.#tasks) if (t.expiresAt <= now) this.#drop(key, t)
    }
    const refusal = this.#refusal(owner, bytes, now)
    if (refusal !== undefined) throw refusal
    const stored: StoredTask = { owner, record: copy(task), expiresAt: now + task.ttlMs, bytes, answers: new Map() }
    this.#tasks.set(`${owner}\0${task.taskId}`, stored)
    this.#count(stored, 1)
  }

  /** Why a new running task of `bytes` does not fit, with when space frees; undefined when it does. */
  #refusal(owner: string, bytes: number, now: number): StoreLimitError | undefined {
    const L = this.limits
    const mine = this.#usage.get(owner) ?? { running: 0, bytes: 0 }
    const all = this.#total
    if (mine.running >= L.maxTasksPerPrincipal) return new QuotaExceeded('running tasks', L.maxTasksPerPrincipal, this.#frees(now, owner, true))
    if (mine.bytes + bytes > L.maxTaskBytesPerPrincipal) return new QuotaExceeded('bytes of tasks', L.maxTaskBytesPerPrincipal, this.#frees(now, owner, false))
    if (all.running >= L.maxTasks) return new TooManyTasks(L.maxTasks, this.#frees(now, undefined, true))
    if (all.bytes + bytes > L.maxTaskBytes) return new StoreFull('bytes of tasks', L.maxTaskBytes, this.#frees(now, undefined, false))
    return undefined
  }

  /** When the first task (of `owner` or anyone; running ones only, or any) expires: space is certain to free then. */
  #frees(now: number, owner: string | undefined, running: boolean): number {
    let first = Number.POSITIVE_INFINITY
    for (const t of this.#tasks.values()) {
      if ((owner === undefined || t.owner === owner) && (!running || !TERMINAL.has(t.record.status)) && t.expiresAt < first) first = t.expiresAt
    }
    return msUntil(first === Number.POSITIVE_INFINITY ? now + 1000 : first, now)
  }

  /** Add (`sign` 1) or take away (-1) what a task counts. */
  #count(t: StoredTask, sign: 1 | -1): void {
    let mine = this.#usage.get(t.owner)
    if (mine === undefined) this.#usage.set(t.owner, (mine = { running: 0, bytes: 0 }))
    const running = TERMINAL.has(t.record.status) ? 0 : sign
    for (const u of [mine, this.#total]) {
      u.running += running
      u.bytes += sign * t.bytes
    }
    if (mine.running === 0 && mine.bytes === 0) this.#usage.delete(t.owner)
  }

  #drop(key: string, t: StoredTask): void {
    this.#tasks.delete(key)
    this.#count(t, -1)
  }

  async getTask(owner: string, taskId: string): Promise<TaskRecord | undefined> {
    const t = this.#get(owner, taskId)
    return t === undefined ? undefined : (t.view ??= frozen(copy(t.record)))
  }

  async updateTask(owner: string, taskId: string, patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>): Promise<TaskRecord | true | undefined> {
    const t = this.#get(owner, taskId)
    if (t === undefined || TERMINAL.has(t.record.status)) return undefined
    this.#count(t, -1)
    Object.assign(t.record, copy(patch), { lastUpdatedAt: new Date().toISOString() })
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete t.record[k as keyof TaskRecord]
    t.view = undefined
    if (TERMINAL.has(t.record.status)) {
      // Finished: it no longer takes a running slot, and its outcome counts in bytes. An outcome
      // that does not fit is not kept: the task fails, saying why.
      t.bytes = RECORD_OVERHEAD + JSON.stringify(t.record).length
      const L = this.limits
      const mine = this.#usage.get(owner)?.bytes ?? 0
      if (mine + t.bytes > L.maxTaskBytesPerPrincipal || this.#total.bytes + t.bytes > L.maxTaskBytes) {
        Object.assign(t.record, { status: 'failed', error: { ...TOO_LARGE } })
        delete t.record.result
        t.bytes = RECORD_OVERHEAD + JSON.stringify(t.record).length
      }
    }
    this.#count(t, 1)
    return t.record.notify === true ? copy(t.record) : true
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
      this.#drop(key, t)
      return undefined
    }
    return t
  }

  clear(): void {
    this.#tasks.clear()
    this.#usage.clear()
    this.#total.running = this.#total.bytes = 0
  }
}

/** The error of a task whose outcome is too large for what the store may keep (its owner's share, or in all). */
export const TOO_LARGE = { code: -32603, message: 'The task finished, but its result is larger than the server may keep for this client' } as const

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
