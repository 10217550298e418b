import type { CallContext } from '../core/call-context.js'
import type { DetailedTask } from '../schema/tasks.js'
import type { Mailbox, Signals, TaskStore } from '../store/types.js'
import { answerTask, cancelTask, findTask, requireTasks } from './task-steps.js'
import { detailedTask } from './records.js'

/** Task methods: `gate` refuses a client that did not declare the Tasks extension (-32021). */
export interface TaskCallOptions {
  gate: boolean
}

/** The Tasks extension's methods for both faces: `McpServer.tasks`. */
export class Tasks {
  constructor(readonly store: () => TaskStore & Mailbox & Signals) {}

  /** `tasks/get`: the task with its result, error or input requests; 404 when unknown or another's. */
  async get(ctx: CallContext, taskId: string, options: TaskCallOptions): Promise<DetailedTask> {
    if (options.gate) requireTasks(ctx)
    return { resultType: 'complete', ...detailedTask(await findTask(this.store(), ctx.principal.id, taskId)) } as DetailedTask
  }

  /** `tasks/update`: answers to the task's outstanding input requests. */
  async update(ctx: CallContext, taskId: string, inputResponses: Record<string, Record<string, unknown>>, options: TaskCallOptions): Promise<void> {
    if (options.gate) requireTasks(ctx)
    await answerTask(this.store(), ctx.principal.id, taskId, inputResponses)
  }

  /** `tasks/cancel`: cooperative, idempotent. */
  async cancel(ctx: CallContext, taskId: string, options: TaskCallOptions): Promise<void> {
    if (options.gate) requireTasks(ctx)
    await cancelTask(this.store(), ctx.principal.id, taskId)
  }
}
