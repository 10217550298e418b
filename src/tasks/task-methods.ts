import type { CallContext } from '../core/call-context.js'
import { etagOf } from '../core/etag.js'
import type { Representation } from '../core/list-cache.js'
import type { DetailedTask } from '../schema/tasks.js'
import type { Mailbox, Signals, TaskRecord, TaskStore } from '../store/types.js'
import { answerTask, cancelTask, findTask, requireTasks } from './task-steps.js'
import { detailedTask } from './records.js'

/** A task record as tasks/get answers it. */
const wire = (record: TaskRecord) => ({ resultType: 'complete', ...detailedTask(record) }) as DetailedTask

/**
 * The Tasks extension's methods for both faces: `McpServer.tasks`. Each refuses a client that did not
 * declare `io.modelcontextprotocol/tasks` on this request (-32021 with `requiredCapabilities`), as
 * the extension says it MUST.
 */
export class Tasks {
  constructor(readonly store: () => TaskStore & Mailbox & Signals) {}

  /** `tasks/get`: the task with its result, error or input requests; 404 when unknown or another's. */
  async get(ctx: CallContext, taskId: string): Promise<DetailedTask> {
    requireTasks(ctx)
    return wire(await findTask(this.store(), ctx.principal.id, taskId))
  }

  /**
   * `tasks/get` as served over HTTP: the task, its JSON text and ETag. A store that hands out one
   * frozen record per version (the memory store) gets them computed once per version, not per poll;
   * a fresh record each read (Redis) is serialized each time.
   */
  async served(ctx: CallContext, taskId: string): Promise<{ task: DetailedTask; representation: Representation }> {
    requireTasks(ctx)
    const record = await findTask(this.store(), ctx.principal.id, taskId)
    let served = Object.isFrozen(record) ? this.#served.get(record) : undefined
    if (served === undefined) {
      const task = wire(record)
      const body = JSON.stringify(task)
      served = { task, representation: { body, etag: etagOf(body) } }
      if (Object.isFrozen(record)) this.#served.set(record, served)
    }
    return served
  }

  readonly #served = new WeakMap<TaskRecord, { task: DetailedTask; representation: Representation }>()

  /** `tasks/update`: answers to the task's outstanding input requests. */
  async update(ctx: CallContext, taskId: string, inputResponses: Record<string, Record<string, unknown>>): Promise<void> {
    requireTasks(ctx)
    await answerTask(this.store(), ctx.principal.id, taskId, inputResponses)
  }

  /** `tasks/cancel`: cooperative, idempotent. */
  async cancel(ctx: CallContext, taskId: string): Promise<void> {
    requireTasks(ctx)
    await cancelTask(this.store(), ctx.principal.id, taskId)
  }
}
