import type { RequestContext } from '../core/request-context.js'
import { errors } from '../errors.js'
import { askedOf, checkResponse } from '../mrtr/responses.js'
import type { Mailbox, Signals, TaskRecord, TaskStore } from '../store/types.js'
import { changeTask } from './records.js'
import { TASKS_CAPABILITY, TASKS_EXTENSION, clientTakesTasks } from './runner.js'
import { ownValue } from '../core/json-limits.js'
import { isThenable, type MaybePromise } from '../core/maybe-promise.js'

/**
 * The Tasks extension's methods, whichever face calls them (`GET /tasks/{id}` and its siblings, or
 * `tasks/get`, `tasks/update`, `tasks/cancel` on /mcp). A task belongs to its creator: anyone else's,
 * like an unknown or expired one, is 404 -32602 (the extension's "unknown taskId").
 */
export const unknownTask = (taskId: string) => errors.notFound(`Unknown task: ${taskId.slice(0, 128)}`)

/** tasks/get: the task record (see `detailedTask` for its wire form); at once when the store answers at once. */
export function findTask(store: TaskStore & Signals, owner: string, taskId: string): MaybePromise<TaskRecord> {
  const task = store.getTask(owner, taskId)
  return isThenable(task) ? Promise.resolve(task).then((t) => found(t, taskId)) : found(task, taskId)
}

function found(task: TaskRecord | undefined, taskId: string): TaskRecord {
  if (task === undefined) throw unknownTask(taskId)
  return task
}

/**
 * tasks/update: answers to the task's outstanding `inputRequests`, each checked against its question
 * (400 -32602 naming the key); keys that name no outstanding request are ignored, and a partial
 * answer leaves the task `input_required` with the rest.
 */
export async function answerTask(store: TaskStore & Signals, owner: string, taskId: string, inputResponses: Record<string, Record<string, unknown>>): Promise<void> {
  const task = await findTask(store, owner, taskId)
  const outstanding = task.inputRequests ?? {}
  const answers: Record<string, Record<string, unknown>> = {}
  for (const [key, response] of Object.entries(inputResponses)) {
    const req = ownValue(outstanding, key)
    if (req === undefined) continue
    checkResponse(`inputResponses["${key}"]`, askedOf(req), response)
    answers[key] = response
  }
  if ((await store.answerTask(owner, task.taskId, answers)) === undefined) throw unknownTask(taskId)
}

/**
 * tasks/cancel: cooperative (the handler's signal aborts, on whichever instance runs it). A task
 * already finished stays as it is, and the ack is the same (the extension makes cancel idempotent).
 */
export async function cancelTask(store: TaskStore & Mailbox & Signals, owner: string, taskId: string): Promise<void> {
  const task = await findTask(store, owner, taskId)
  await changeTask(store, owner, task.taskId, { status: 'cancelled', statusMessage: 'Cancelled by the client', inputRequests: undefined })
  await store.publishCancel(owner, `task:${task.taskId}`, 'Cancelled by the client')
}

/** 400 -32021 naming the extension, for a client that did not declare it (the JSON-RPC face's gate). */
export function requireTasks(ctx: RequestContext): void {
  if (!clientTakesTasks(ctx.clientCapabilities)) {
    throw errors.missingCapability(TASKS_CAPABILITY, `The tasks methods need the ${TASKS_EXTENSION} extension: declare it in the client capabilities`)
  }
}
