import { QuotaExceeded, StoreFull, TooManyTasks } from './store-errors.js'
import { RECORD_OVERHEAD } from './limits.js'
import { TOO_LARGE } from './memory-tasks.js'
import { answerArgs, createArgs, patchArgs, taskText, toTask } from './redis-codec.js'
import type { RedisCore } from './redis-core.js'
import { TERMINAL, type IdempotentStart, type TaskRecord, type TaskText } from './types.js'

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
 * A {@link RedisStore}'s tasks and idempotency records: each on its own slot (`P t:{h:<taskId>}`,
 * `P i:{h:<requestId>}`), counted in a registry index that bounds them over all owners.
 */
export class RedisTasks {
  readonly #r: RedisCore

  constructor(core: RedisCore) {
    this.#r = core
  }

  /**
   * The reservation in the index and the task's write leave together (one round trip: two slots,
   * two scripts). A refused reservation deletes the task written beside it before anyone knew its
   * id; a reservation whose write fails only holds a place until its ttl.
   */
  createTask(owner: string, task: TaskRecord): Promise<void> {
    const { key, member } = this.#r.record('t', owner, task.taskId)
    const args = createArgs(task)
    // Chained, not async (one frame less for every task): most reservations are 'ok'.
    return Promise.all([
      this.#index(member, task.ttlMs, Math.max(RECORD_OVERHEAD + JSON.stringify(args).length, TASK_FLOOR), 'create'),
      this.#r.write('mcpCreateTask', key, task.ttlMs, ...args)
    ]).then(([indexed]) => ((indexed as Verdict)[0] === 'ok' ? undefined : this.#refuseTask(key, indexed as Verdict)))
  }

  /** Delete a task whose reservation was refused, and say why. */
  async #refuseTask(key: string, [verdict, ms, limit, what]: Verdict): Promise<never> {
    await this.#r.guard(() => this.#r.client.del(key, `${key}:in`))
    if (verdict === 'quota') throw new QuotaExceeded(what!, Number(limit), ms!)
    if (verdict === 'running') throw new TooManyTasks(Number(limit), ms!)
    throw new StoreFull('bytes of tasks', Number(limit), ms!)
  }

  #index(member: string, ms: number, bytes: number, mode: 'create' | 'finish'): Promise<unknown> {
    const L = this.#r.limits
    return this.#r.run('mcpIndexTask', this.#r.registry('tasks'), member, ms, bytes, mode, L.maxTasks, L.maxTasksPerPrincipal, L.maxTaskBytes, L.maxTaskBytesPerPrincipal)
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
    return (await this.#r.run('mcpGetTask', this.#r.record('t', owner, taskId).key)) as Found
  }

  /**
   * A task that finishes leaves the running ones and counts its outcome's bytes (the index first);
   * an outcome that does not fit is not kept: the task fails, saying why.
   */
  updateTask(owner: string, taskId: string, patch: TaskPatch): Promise<TaskRecord | true | undefined> {
    const stamp = JSON.stringify(new Date().toISOString())
    const { key, member } = this.#r.record('t', owner, taskId)
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
    const key = this.#r.record('t', owner, taskId).key
    return ((await this.#r.write('mcpAnswerTask', key, stamp, ...answerArgs(responses))) as string[] | null) ?? undefined
  }

  async renewTask(owner: string, taskId: string, leaseUntil: number): Promise<boolean> {
    return (await this.#r.run('mcpRenewTask', this.#r.record('t', owner, taskId).key, JSON.stringify(leaseUntil))) === 1
  }

  /** Waits on the task's wake-up channel (see `mcpAnswerTask`). */
  awaitTaskAnswers(owner: string, taskId: string, keys: readonly string[], signal: AbortSignal): Promise<Record<string, Record<string, unknown>>> {
    const { key, channel } = this.#r.record('t', owner, taskId)
    return this.#r.bus.wait(channel, key, signal, undefined, async () => {
      const got = (await this.#r.run('mcpTakeTaskAnswers', key, ...keys)) as string[] | number
      if (got === -1) throw new Error('The task is gone')
      if (got === 0) return undefined
      const out: Record<string, Record<string, unknown>> = {}
      keys.forEach((k, i) => (out[k] = JSON.parse((got as string[])[i]!) as Record<string, unknown>))
      return { value: out }
    })
  }

  /**
   * The claim first (atomic on the record's slot), then its place in the index. Nothing is evicted to
   * make room (a running claim pushed out let its retry run the tool twice): a claim that does not
   * fit is withdrawn and refused.
   */
  async beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    const { key, member } = this.#r.record('i', owner, requestId)
    const [state, response] = (await this.#r.run('mcpBeginIdempotent', key, digest, leaseMs)) as [IdempotentStart['state'], string?]
    if (state === 'new') {
      const [verdict, ms, limit] = (await this.#indexIdempotent(member, leaseMs, RECORD_OVERHEAD + requestId.length + digest.length, 'claim')) as Verdict
      if (verdict !== 'ok') {
        await this.#r.run('mcpDel', key)
        throw verdict === 'quota' ? new QuotaExceeded('replayable tool calls', Number(limit), ms!) : new StoreFull('replayable tool calls', Number(limit), ms!)
      }
    }
    return state === 'done' ? { state, response: response! } : { state }
  }

  #indexIdempotent(member: string, ms: number, bytes: number, mode: 'claim' | 'finish' | 'renew' | 'drop'): Promise<unknown> {
    const L = this.#r.limits
    const bounds = [L.maxIdempotencyRecords, L.maxIdempotencyBytes, L.maxIdempotencyRecordsPerPrincipal, L.maxIdempotencyBytesPerPrincipal]
    return this.#r.run('mcpIndexIdempotent', this.#r.registry('idem'), member, ms, bytes, mode, ...bounds)
  }

  async renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    const { key, member } = this.#r.record('i', owner, requestId)
    if ((await this.#r.run('mcpRenewIdempotent', key, leaseMs)) !== 1) return false
    await this.#indexIdempotent(member, leaseMs, 0, 'renew')
    return true
  }

  /** The index first: an outcome that does not fit (its owner's share, or the store's) is not kept, and a retry runs again. */
  async finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    const { key, member } = this.#r.record('i', owner, requestId)
    const [verdict] = (await this.#indexIdempotent(member, ttlMs, RECORD_OVERHEAD + requestId.length + 64 + response.length, 'finish')) as Verdict
    if (verdict !== 'ok') {
      await this.#r.run('mcpDel', key)
      return
    }
    if ((await this.#r.write('mcpFinishIdempotent', key, response, ttlMs)) !== 1) await this.#indexIdempotent(member, 0, 0, 'drop')
  }

  async abandonIdempotent(owner: string, requestId: string): Promise<void> {
    const { key, member } = this.#r.record('i', owner, requestId)
    await Promise.all([this.#r.run('mcpDel', key), this.#indexIdempotent(member, 0, 0, 'drop')])
  }
}
