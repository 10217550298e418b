import { QuotaExceeded, StoreFull, TooManyTasks } from './store-errors.js'
import { RECORD_OVERHEAD } from './limits.js'
import { TOO_LARGE } from './memory-tasks.js'
import { answerArgs, createArgs, patchArgs, taskText, toTask } from './redis-codec.js'
import type { RedisCore } from './redis-core.js'
import { TERMINAL, type TaskRecord, type TaskStore, type TaskText } from './types.js'
import { PART, REGISTRY } from './redis-keys.js'
import { Ledger } from './redis-ledger.js'

/** A ledger's answer (see `redis-scripts-registry.ts`): 'ok', or the bound reached, ms until space frees, the limit. */
type Verdict = [string, number?, string?, string?]

type TaskPatch = Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>

/**
 * The least a task counts in the ledger (bytes): a task is created at about this size, and a small
 * outcome (a short text, a cancellation) then never counts more than the task already does, so its
 * write needs no verdict from the ledger first: one write to Redis instead of two in a row.
 */
export const TASK_FLOOR = 512
type Found = [string[], string[]] | null

/** What mcpUpdateTask answered: nil (unknown or terminal), 1 (changed), or the task to notify with. */
function updated(out: unknown): TaskRecord | true | undefined {
  return out === null ? undefined : out === 1 ? true : toTask(out as [string[], string[]])
}

/**
 * A {@link RedisStore}'s tasks: each on its own slot (`P t:{h:<taskId>}`), counted in a ledger
 * that bounds them over all owners (in shards by owner: see `redis-ledger.ts`).
 */
export class RedisTasks implements TaskStore {
  readonly #r: RedisCore
  readonly ledger: Ledger

  constructor(core: RedisCore) {
    this.#r = core
    const L = core.limits
    this.ledger = new Ledger(core.keys.prefix, REGISTRY.tasks, core.ledgerShards, [
      [L.maxTasks, L.maxTasksPerPrincipal],
      [L.maxTaskBytes, L.maxTaskBytesPerPrincipal]
    ])
  }

  /**
   * The reservation in the index and the task's write leave together (one round trip: two slots,
   * two scripts). A refused reservation deletes the task written beside it before anyone knew its
   * id; a reservation whose write fails only holds a place until its ttl.
   */
  createTask(owner: string, task: TaskRecord): Promise<void> {
    const { key, member } = this.#r.keys.record('task', owner, task.taskId)
    const args = createArgs(task)
    // Chained, not async (one frame less for every task): most reservations are 'ok'.
    return Promise.all([
      this.#index(member, task.ttlMs, Math.max(RECORD_OVERHEAD + JSON.stringify(args).length, TASK_FLOOR), 'create'),
      this.#r.write('mcpCreateTask', key, task.ttlMs, ...args),
      task.notify === true && task.leaseUntil !== undefined ? this.#lease(owner, task.taskId, task.leaseUntil) : undefined
    ]).then(([indexed]) => ((indexed as Verdict)[0] === 'ok' ? undefined : this.#refuseTask(key, indexed as Verdict)))
  }

  /** Delete a task whose reservation was refused, and say why. */
  async #refuseTask(key: string, [verdict, ms, limit, what]: Verdict): Promise<never> {
    await this.#r.guard(() => this.#r.client.del(key, `${key}${PART.inputRequests}`))
    if (verdict === 'quota') throw new QuotaExceeded(what!, Number(limit), ms!)
    if (verdict === 'running') throw new TooManyTasks(Number(limit), ms!)
    throw new StoreFull('bytes of tasks', Number(limit), ms!)
  }

  /** In the ledger's shard of the member's owner, with that shard's share of the store-wide bounds. */
  #index(member: string, ms: number, bytes: number, mode: 'create' | 'finish'): Promise<unknown> {
    const [L, ledger] = [this.#r.limits, this.ledger]
    const k = ledger.shardOf(member)
    return this.#r.run('mcpIndexTask', ledger.key(k), member, ms, bytes, mode, ledger.share(L.maxTasks, k), L.maxTasksPerPrincipal, ledger.share(L.maxTaskBytes, k), L.maxTaskBytesPerPrincipal)
  }

  async getTask(owner: string, taskId: string): Promise<TaskRecord | undefined> {
    const found = await this.#read(owner, taskId)
    return found === null ? undefined : toTask(found)
  }

  async getTaskText(owner: string, taskId: string): Promise<TaskText | undefined> {
    const found = await this.#read(owner, taskId)
    return found === null ? undefined : taskText(found)
  }

  async #read(owner: string, taskId: string): Promise<Found> {
    return (await this.#r.run('mcpGetTask', this.#r.keys.record('task', owner, taskId).key)) as Found
  }

  /**
   * A task that finishes leaves the running ones and counts its outcome's bytes (the index first);
   * an outcome that does not fit is not kept: the task fails, saying why.
   */
  updateTask(owner: string, taskId: string, patch: TaskPatch): Promise<TaskRecord | true | undefined> {
    const stamp = JSON.stringify(new Date().toISOString())
    const { key, member } = this.#r.keys.record('task', owner, taskId)
    const args = patchArgs(patch)
    if (patch.status === undefined || !TERMINAL.has(patch.status)) return this.#r.write('mcpUpdateTask', key, stamp, ...args).then(updated)
    const bytes = RECORD_OVERHEAD + JSON.stringify(args).length
    const counted = this.#index(member, 0, bytes, 'finish')
    // No bigger than what the task already counts, the ledger cannot refuse it: the count and the
    // outcome leave in one write. A bigger outcome waits for the verdict.
    if (bytes > TASK_FLOOR) return this.#finishLarge(key, stamp, patch, args, counted)
    return Promise.all([this.#r.write('mcpUpdateTask', key, stamp, ...args), counted]).then(([out]) => updated(out))
  }

  async #finishLarge(key: string, stamp: string, patch: TaskPatch, args: (string | number)[], counted: Promise<unknown>): Promise<TaskRecord | true | undefined> {
    const [verdict] = (await counted) as Verdict
    const kept = verdict === 'large' ? patchArgs({ ...patch, status: 'failed', result: undefined, error: { ...TOO_LARGE } }) : args
    return updated(await this.#r.write('mcpUpdateTask', key, stamp, ...kept))
  }

  async answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined> {
    const stamp = JSON.stringify(new Date().toISOString())
    const key = this.#r.keys.record('task', owner, taskId).key
    return ((await this.#r.write('mcpAnswerTask', key, stamp, ...answerArgs(responses))) as string[] | null) ?? undefined
  }

  async renewTask(owner: string, taskId: string, leaseUntil: number): Promise<boolean> {
    return (await this.#r.run('mcpRenewTask', this.#r.keys.record('task', owner, taskId).key, JSON.stringify(leaseUntil))) === 1
  }

  /**
   * The lease index (`P {g}:leases`, JSON [owner, taskId] by lease) follows a task's lease lazily:
   * renewals leave it (one write a renewal saved), and a sweep that finds a task not lapsed after
   * all moves it to its lease; a task gone, or ended and notified, leaves it.
   */
  async takeLapsedTask(owner: string, taskId: string, now: number, leaseUntil: number): Promise<TaskRecord | undefined> {
    const out = await this.#r.run('mcpTakeLapsedTask', this.#r.keys.record('task', owner, taskId).key, now, JSON.stringify(leaseUntil))
    if (out === 0) {
      await this.#unlease(owner, taskId)
      return undefined
    }
    if (typeof out === 'number') {
      await this.#lease(owner, taskId, out, true)
      return undefined
    }
    await this.#lease(owner, taskId, leaseUntil, true)
    return toTask(out as [string[], string[]])
  }

  async notifiedTask(owner: string, taskId: string): Promise<void> {
    await this.#r.guard(() => this.#r.client.hdel(this.#r.keys.record('task', owner, taskId).key, 'notifyPending'))
    await this.#unlease(owner, taskId)
  }

  async lapsedTasks(now: number, max: number): Promise<{ owner: string; taskId: string }[]> {
    const members = await this.#r.guard(() => this.#r.client.zrangebyscore(this.#r.keys.registry(REGISTRY.leases), '-inf', `(${now}`, 'LIMIT', 0, max))
    return members.map((m) => {
      const [owner, taskId] = JSON.parse(m) as [string, string]
      return { owner, taskId }
    })
  }

  /** Put a task in the lease index, or move it (`existing`: only if it is still there). */
  #lease(owner: string, taskId: string, leaseUntil: number, existing = false): Promise<unknown> {
    const key = this.#r.keys.registry(REGISTRY.leases)
    const member = JSON.stringify([owner, taskId])
    return this.#r.guard(() => (existing ? this.#r.client.zadd(key, 'XX', leaseUntil, member) : this.#r.client.zadd(key, leaseUntil, member)))
  }

  #unlease(owner: string, taskId: string): Promise<unknown> {
    return this.#r.guard(() => this.#r.client.zrem(this.#r.keys.registry(REGISTRY.leases), JSON.stringify([owner, taskId])))
  }

  /** Waits on the task's wake-up channel (see `mcpAnswerTask`). */
  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>> {
    const { key, channel } = this.#r.keys.record('task', owner, taskId)
    return this.#r.bus.wait(channel, key, signal, undefined, async () => {
      const got = (await this.#r.run('mcpTakeTaskAnswers', key, ...keys)) as string[] | number
      if (got === -1) throw new Error('The task is gone')
      if (got === 0) return undefined
      const out: Record<string, Record<string, unknown>> = {}
      keys.forEach((k, i) => (out[k] = JSON.parse((got as string[])[i]!) as Record<string, unknown>))
      return { value: out }
    })
  }
}
