import type { RequestContext } from '../core/request-context.js'
import { errors } from '../errors.js'
import { askedOf, checkResponse } from '../mrtr/responses.js'
import { TERMINAL, type StoreRoles, type TaskRecord } from '../store/types.js'
import { changeTask } from './records.js'
import { TASKS_CAPABILITY, TASKS_EXTENSION, clientTakesTasks } from './runner.js'
import { ownValue } from '../core/json-limits.js'
import { isThenable, type MaybePromise } from '../core/maybe-promise.js'

/**
 * The Tasks extension's methods, whichever face calls them (`GET /tasks/{id}` and its siblings, or
 * `tasks/get`, `tasks/update`, `tasks/cancel` on /mcp). A task belongs to its creator: anyone else's,
 * like an unknown or expired one, is 404 -32602 (the extension's "unknown taskId").
 */
export const unknownTask = (taskId: string) => errors.unknownTask(taskId)

/**
 * tasks/get: the task record (see `detailedTask` for its wire form); at once when the store answers at
 * once. A task whose lease lapsed (see {@link lapsed}) is failed first, and read again.
 */
export function findTask(store: Pick<StoreRoles, 'tasks' | 'mailbox' | 'signals'>, owner: string, taskId: string): MaybePromise<TaskRecord> {
  const task = store.tasks.getTask(owner, taskId)
  if (isThenable(task)) return Promise.resolve(task).then((t) => (t !== undefined && lapsed(t) ? failLapsed(store, owner, taskId) : found(t, taskId)))
  return task !== undefined && lapsed(task) ? failLapsed(store, owner, taskId) : found(task, taskId)
}

function found(task: TaskRecord | undefined, taskId: string): TaskRecord {
  if (task === undefined) throw unknownTask(taskId)
  return task
}

/** How a task that lost the instance running it ends (see {@link lapsed}). */
export const INSTANCE_LOST = { code: -32603, message: 'The server instance running this task stopped before it finished' } as const

/**
 * A task still running past its lease: the instance running it stopped renewing it (it died, or has
 * not reached the store for a whole lease), so nothing will finish it. Instances' clocks are compared:
 * the lease (60 s by default) must be far longer than their skew.
 */
export function lapsed(task: { status: TaskRecord['status']; leaseUntil?: number }, now = Date.now()): boolean {
  return task.leaseUntil !== undefined && task.leaseUntil < now && !TERMINAL.has(task.status)
}

/** Fail a task whose lease lapsed, saying why (notifying as any change does), and read it again. */
export async function failLapsed(store: Pick<StoreRoles, 'tasks' | 'mailbox' | 'signals'>, owner: string, taskId: string): Promise<TaskRecord> {
  await changeTask(store, owner, taskId, { status: 'failed', statusMessage: INSTANCE_LOST.message, error: { ...INSTANCE_LOST }, inputRequests: undefined })
  return found(await store.tasks.getTask(owner, taskId), taskId)
}

/**
 * tasks/update: answers to the task's outstanding `inputRequests`, each checked against its question
 * (400 -32602 naming the key); keys that name no outstanding request are ignored, and a partial
 * answer leaves the task `input_required` with the rest.
 */
export async function answerTask(store: Pick<StoreRoles, 'tasks' | 'mailbox' | 'signals'>, owner: string, taskId: string, inputResponses: Record<string, Record<string, unknown>>): Promise<void> {
  const task = await findTask(store, owner, taskId)
  const outstanding = task.inputRequests ?? {}
  const answers: Record<string, Record<string, unknown>> = {}
  for (const [key, response] of Object.entries(inputResponses)) {
    const req = ownValue(outstanding, key)
    if (req === undefined) continue
    checkResponse(`inputResponses["${key}"]`, askedOf(req), response)
    answers[key] = response
  }
  if ((await store.tasks.answerTask(owner, task.taskId, answers)) === undefined) throw unknownTask(taskId)
}

/**
 * tasks/cancel: cooperative (the handler's signal aborts, on whichever instance runs it). A task
 * already finished stays as it is, and the ack is the same (the extension makes cancel idempotent).
 */
export async function cancelTask(store: Pick<StoreRoles, 'tasks' | 'mailbox' | 'signals'>, owner: string, taskId: string): Promise<void> {
  const task = await findTask(store, owner, taskId)
  await changeTask(store, owner, task.taskId, { status: 'cancelled', statusMessage: 'Cancelled by the client', inputRequests: undefined })
  await store.signals.publishCancel(owner, `task:${task.taskId}`, 'Cancelled by the client')
}

/** 400 -32021 naming the extension, for a client that did not declare it (the JSON-RPC face's gate). */
export function requireTasks(ctx: RequestContext): void {
  if (!clientTakesTasks(ctx.clientCapabilities)) {
    throw errors.missingCapability(TASKS_CAPABILITY, `The tasks methods need the ${TASKS_EXTENSION} extension: declare it in the client capabilities`)
  }
}
