import { QuotaExceeded, StoreFull, TooManyTasks, type StoreLimitError } from './store-errors.js'
import { RECORD_OVERHEAD, msUntil } from './limits.js'
import { TERMINAL, type StoreLimits, type TaskRecord, type TaskStore } from './types.js'
import { ExpiryHeap } from './expiry-heap.js'

type Limits = Pick<StoreLimits, 'maxTasks' | 'maxTasksPerPrincipal' | 'maxTaskBytes' | 'maxTaskBytesPerPrincipal'>

/** Tasks running, and bytes of all tasks kept, of one owner or of everyone. */
interface Usage {
  running: number
  bytes: number
}

interface StoredTask {
  /** `owner\0taskId`, its key in the store. */
  readonly key: string
  readonly owner: string
  record: TaskRecord
  readonly expiresAt: number
  /** What it counts against the byte bounds: its JSON text at creation, its outcome's once finished. */
  bytes: number
  /** Gone from the store (expired): its entries in the expiry heaps are stale. */
  dropped: boolean
  /** Answers not yet taken by the runner (made on the first answer). */
  answers: Map<string, Record<string, unknown>> | undefined
  wake?: () => void
  /**
   * What a read hands out until the next change: one deep copy per version, frozen, shared by every
   * read (a task polled a thousand times is copied once, not a thousand times).
   */
  view?: TaskRecord
}

/** The tasks of one owner, or of everyone, by expiry: all of them, and those still running. */
interface Expiries {
  all: ExpiryHeap<StoredTask>
  running: ExpiryHeap<StoredTask>
}

const dropped = (t: StoredTask): boolean => t.dropped
const notRunning = (t: StoredTask): boolean => t.dropped || TERMINAL.has(t.record.status)
const expiries = (): Expiries => ({ all: new ExpiryHeap(dropped), running: new ExpiryHeap(notRunning) })

/**
 * The tasks of a {@link MemoryStore}: records with their expiry, and answers not yet taken. Running
 * tasks are bounded by count (in all and per owner); every task kept, finished ones with their
 * results, by bytes (in all and per owner).
 *
 * Tasks are also kept by expiry, in all and per owner (see {@link ExpiryHeap}): a create drops what
 * has expired, and a refusal finds when space frees, in O(log n). Walking every task for both made
 * a client at its quota cost O(n) a refused request (milliseconds with 100,000 tasks kept): a
 * retry loop of one client slowed every other.
 */
export class MemoryTasks implements TaskStore {
  readonly #tasks = new Map<string, StoredTask>()
  readonly #usage = new Map<string, Usage>()
  readonly #total: Usage = { running: 0, bytes: 0 }
  readonly #expiries = expiries()
  readonly #byOwner = new Map<string, Expiries>()
  /** Tasks that asked for notifications and hold a lease, until their end is notified (see {@link lapsedTasks}). */
  readonly #leased = new Map<string, StoredTask>()

  constructor(readonly limits: Limits) {}

  async createTask(owner: string, task: TaskRecord): Promise<void> {
    const now = Date.now()
    for (let t = this.#expiries.all.takeExpired(now); t !== undefined; t = this.#expiries.all.takeExpired(now)) this.#drop(t)
    const bytes = RECORD_OVERHEAD + JSON.stringify(task).length
    const refusal = this.#refusal(owner, bytes, now)
    if (refusal !== undefined) throw refusal
    const key = `${owner}\0${task.taskId}`
    const stored: StoredTask = { key, owner, record: copy(task), expiresAt: now + task.ttlMs, bytes, dropped: false, answers: undefined }
    this.#tasks.set(key, stored)
    this.#count(stored, 1)
    if (task.notify === true && task.leaseUntil !== undefined) this.#leased.set(key, stored)
    let mine = this.#byOwner.get(owner)
    if (mine === undefined) this.#byOwner.set(owner, (mine = expiries()))
    for (const e of [this.#expiries, mine]) {
      e.all.push(stored)
      e.running.push(stored)
    }
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
    const e = owner === undefined ? this.#expiries : this.#byOwner.get(owner)
    const first = (running ? e?.running : e?.all)?.first()
    return msUntil(first === undefined ? now + 1000 : first.expiresAt, now)
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

  /**
   * Take an expired task out. Its heap entries go stale; those of its owner that expire no later
   * are gone too, so they surface now: no heap keeps more entries than there are tasks.
   */
  #drop(t: StoredTask): void {
    this.#tasks.delete(t.key)
    this.#leased.delete(t.key)
    this.#count(t, -1)
    t.dropped = true
    this.#expiries.running.first()
    const mine = this.#byOwner.get(t.owner)!
    mine.running.first()
    if (mine.all.first() === undefined) this.#byOwner.delete(t.owner)
  }

  getTask(owner: string, taskId: string): TaskRecord | undefined {
    const t = this.#get(owner, taskId)
    return t === undefined ? undefined : (t.view ??= frozen(copy(t.record)))
  }

  async updateTask(owner: string, taskId: string, patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>): Promise<TaskRecord | true | undefined> {
    const t = this.#get(owner, taskId)
    if (t === undefined || TERMINAL.has(t.record.status)) return undefined
    this.#count(t, -1)
    Object.assign(t.record, copy(patch), { lastUpdatedAt: new Date().toISOString() })
    for (const k of Object.keys(patch) as (keyof typeof patch)[]) if (patch[k] === undefined) delete t.record[k]
    t.view = undefined
    if (TERMINAL.has(t.record.status)) {
      if (t.record.notify === true) t.record.notifyPending = true
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
    t.answers ??= new Map()
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

  async renewTask(owner: string, taskId: string, leaseUntil: number): Promise<boolean> {
    const t = this.#get(owner, taskId)
    if (t === undefined || !guarded(t.record)) return false
    t.record.leaseUntil = leaseUntil
    t.view = undefined
    return true
  }

  async takeLapsedTask(owner: string, taskId: string, now: number, leaseUntil: number): Promise<TaskRecord | undefined> {
    const t = this.#get(owner, taskId)
    if (t === undefined || !guarded(t.record) || t.record.leaseUntil! >= now) return undefined
    t.record.leaseUntil = leaseUntil
    t.view = undefined
    return copy(t.record)
  }

  async notifiedTask(owner: string, taskId: string): Promise<void> {
    const t = this.#get(owner, taskId)
    if (t === undefined || t.record.notifyPending !== true) return
    delete t.record.notifyPending
    t.view = undefined
    this.#leased.delete(t.key)
  }

  async lapsedTasks(now: number, max: number): Promise<{ owner: string; taskId: string }[]> {
    const out: { owner: string; taskId: string }[] = []
    for (const t of this.#leased.values()) {
      if (out.length >= max) break
      if (t.record.leaseUntil! < now) out.push({ owner: t.owner, taskId: t.record.taskId })
    }
    return out
  }

  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const t = this.#get(owner, taskId)
        if (t === undefined) return finish(new Error('The task is gone'))
        const answers = t.answers
        if (answers === undefined || !keys.every((k) => answers.has(k))) return
        const out: Record<string, Record<string, unknown>> = {}
        for (const k of keys) {
          out[k] = answers.get(k)!
          answers.delete(k)
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
      this.#drop(t)
      return undefined
    }
    return t
  }

  clear(): void {
    this.#tasks.clear()
    this.#usage.clear()
    this.#total.running = this.#total.bytes = 0
    this.#expiries.all.clear()
    this.#expiries.running.clear()
    this.#byOwner.clear()
    this.#leased.clear()
  }
}

/** A task its lease still guards: running, or ended with its notification pending. */
const guarded = (r: TaskRecord): boolean => r.leaseUntil !== undefined && (!TERMINAL.has(r.status) || r.notifyPending === true)

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
  // Object.keys, not Object.entries: no array a property (1.4 KB a task creation, heap sampling).
  const keys = Object.keys(value)
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!
    const v = copy((value as Record<string, unknown>)[k])
    // An own `__proto__` key (JSON from a client or an upstream) stays a key, as Redis keeps it:
    // assigned, it would become the copy's prototype and vanish from its JSON.
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
    else out[k] = v
  }
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
