import type { CallContext } from '../core/call-context.js'
import { etagOf } from '../core/etag.js'
import type { Representation } from '../core/list-cache.js'
import type { DetailedTask } from '../schema/tasks.js'
import type { StoreRoles, TaskRecord } from '../store/types.js'
import { answerTask, cancelTask, findTask, lapsed, recoverLapsed, requireTasks, unknownTask, type TaskDeps } from './task-steps.js'
import type { TaskLeases } from './leases.js'
import { detailedTask } from './records.js'
import { isThenable, type MaybePromise } from '../core/maybe-promise.js'

/** tasks/get as HTTP serves it (see {@link Tasks.served}). */
export interface ServedTask {
  status: TaskRecord['status']
  pollIntervalMs: number
  representation: Representation
}

/** A task record as tasks/get answers it. */
const wire = (record: TaskRecord) => ({ resultType: 'complete', ...detailedTask(record) }) as DetailedTask

/**
 * The Tasks extension's methods for both faces: `McpServer.tasks`. Each refuses a client that did not
 * declare `io.modelcontextprotocol/tasks` on this request (-32021 with `requiredCapabilities`), as
 * the extension says it MUST.
 */
export class Tasks {
  /** What the steps need, made once: the store read when used (the plugin may set it after construction), not an object per poll. */
  readonly #deps: TaskDeps

  constructor(
    readonly store: () => Pick<StoreRoles, 'tasks' | 'mailbox' | 'signals'>,
    readonly leases: Pick<TaskLeases, 'until'>
  ) {
    this.#deps = {
      get store() {
        return store()
      },
      leases
    }
  }

  /** `tasks/get`: the task with its result, error or input requests; 404 when unknown or another's. */
  async get(ctx: CallContext, taskId: string): Promise<DetailedTask> {
    requireTasks(ctx)
    return wire(await findTask(this.#deps, ctx.principal.id, taskId))
  }

  /**
   * `tasks/get` as served over HTTP: its JSON text and ETag, and the status and poll interval its
   * headers need. A store that keeps tasks as JSON (Redis) hands the text over (getTaskText); one
   * that hands out a frozen record per version (memory) gets it serialized once per version.
   */
  served(ctx: CallContext, taskId: string): MaybePromise<ServedTask> {
    requireTasks(ctx)
    const deps = this.#deps
    if (deps.store.tasks.getTaskText !== undefined) return servedText(deps, ctx.principal.id, taskId)
    // At once when the store answers at once (memory): a poll takes no promise.
    const record = findTask(deps, ctx.principal.id, taskId)
    return isThenable(record) ? record.then((r) => this.#serve(r)) : this.#serve(record)
  }

  #serve(record: TaskRecord): ServedTask {
    let served = Object.isFrozen(record) ? this.#served.get(record) : undefined
    if (served === undefined) {
      const body = JSON.stringify(wire(record))
      served = { status: record.status, pollIntervalMs: record.pollIntervalMs, representation: { body, etag: etagOf(body) } }
      if (Object.isFrozen(record)) this.#served.set(record, served)
    }
    return served
  }

  readonly #served = new WeakMap<TaskRecord, ServedTask>()

  /** `tasks/update`: answers to the task's outstanding input requests. */
  async update(ctx: CallContext, taskId: string, inputResponses: Record<string, Record<string, unknown>>): Promise<void> {
    requireTasks(ctx)
    await answerTask(this.#deps, ctx.principal.id, taskId, inputResponses)
  }

  /** `tasks/cancel`: cooperative, idempotent. */
  async cancel(ctx: CallContext, taskId: string): Promise<void> {
    requireTasks(ctx)
    await cancelTask(this.#deps, ctx.principal.id, taskId)
  }
}

/**
 * A poll from a store that keeps tasks as JSON (Redis): its text, neither decoded nor encoded. A task
 * whose lease lapsed is recovered first, and read again.
 */
async function servedText({ store, leases }: TaskDeps, owner: string, taskId: string): Promise<ServedTask> {
  let text = await store.tasks.getTaskText!(owner, taskId)
  if (text !== undefined && lapsed(text)) {
    await recoverLapsed(store, leases, owner, taskId)
    text = await store.tasks.getTaskText!(owner, taskId)
  }
  if (text === undefined) throw unknownTask(taskId)
  return { status: text.status, pollIntervalMs: text.pollIntervalMs, representation: { body: text.json, etag: etagOf(text.json) } }
}
