import type { CallContext } from '../core/call-context.js'
import type { DetailedTask } from '../schema/tasks.js'
import type { Mailbox, Signals, TaskStore } from '../store/types.js'
import { answerTask, cancelTask, findTask, requireTasks } from './task-steps.js'
import { detailedTask } from './records.js'

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
    return { resultType: 'complete', ...detailedTask(await findTask(this.store(), ctx.principal.id, taskId)) } as DetailedTask
  }

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
