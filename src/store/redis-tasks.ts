import { TooManyTasks } from './store-errors.js'
import { answerArgs, createArgs, patchArgs, toTask } from './redis-codec.js'
import type { RedisCore } from './redis-core.js'
import type { IdempotentStart, TaskRecord } from './types.js'

type TaskPatch = Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>
type Found = [string[], string[]] | null

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
  async createTask(owner: string, task: TaskRecord): Promise<void> {
    const { key, member } = this.#r.record('t', owner, task.taskId)
    const max = this.#r.limits.maxTasks
    const [reserved] = await Promise.all([
      this.#r.run('mcpReserveTask', this.#r.registry('tasks'), member, task.ttlMs, max),
      this.#r.write('mcpCreateTask', key, task.ttlMs, ...createArgs(task))
    ])
    if (reserved === -1) {
      await this.#r.client.del(key, `${key}:in`)
      throw new TooManyTasks(max)
    }
  }

  async getTask(owner: string, taskId: string): Promise<TaskRecord | undefined> {
    const found = (await this.#r.run('mcpGetTask', this.#r.record('t', owner, taskId).key)) as Found
    return found === null ? undefined : toTask(found)
  }

  async updateTask(owner: string, taskId: string, patch: TaskPatch): Promise<TaskRecord | undefined> {
    const stamp = JSON.stringify(new Date().toISOString())
    const out = (await this.#r.write('mcpUpdateTask', this.#r.record('t', owner, taskId).key, stamp, ...patchArgs(patch))) as Found
    return out === null ? undefined : toTask(out)
  }

  async answerTask(owner: string, taskId: string, responses: Record<string, Record<string, unknown>>): Promise<string[] | undefined> {
    const stamp = JSON.stringify(new Date().toISOString())
    const key = this.#r.record('t', owner, taskId).key
    return ((await this.#r.write('mcpAnswerTask', key, stamp, ...answerArgs(responses))) as string[] | null) ?? undefined
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

  /** The claim first (atomic on the record's slot), then its place in the index, which may push the one expiring first out. */
  async beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    const { key, member } = this.#r.record('i', owner, requestId)
    const [state, response] = (await this.#r.run('mcpBeginIdempotent', key, digest, leaseMs)) as [IdempotentStart['state'], string?]
    if (state === 'new') {
      const evicted = (await this.#r.run('mcpIndexIdempotent', this.#r.registry('idem'), member, leaseMs, this.#r.limits.maxIdempotencyRecords)) as string | null
      if (evicted !== null) await this.#r.client.del(`${this.#r.prefix}i:{${evicted}}`)
    }
    return state === 'done' ? { state, response: response! } : { state }
  }

  async renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    const { key, member } = this.#r.record('i', owner, requestId)
    if ((await this.#r.run('mcpRenewIdempotent', key, leaseMs)) !== 1) return false
    await this.#r.run('mcpIndexIdempotent', this.#r.registry('idem'), member, leaseMs, 0)
    return true
  }

  async finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    const { key, member } = this.#r.record('i', owner, requestId)
    if ((await this.#r.write('mcpFinishIdempotent', key, response, ttlMs)) === 1) {
      await this.#r.run('mcpIndexIdempotent', this.#r.registry('idem'), member, ttlMs, 0)
    }
  }

  async abandonIdempotent(owner: string, requestId: string): Promise<void> {
    const { key, member } = this.#r.record('i', owner, requestId)
    await Promise.all([this.#r.client.del(key), this.#r.client.zrem(this.#r.registry('idem'), member)])
  }
}
