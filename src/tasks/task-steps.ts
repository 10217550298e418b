import type { RequestContext } from '../core/request-context.js'
import { errors } from '../errors.js'
import { askedOf, checkResponse } from '../mrtr/responses.js'
import { TERMINAL, type StoreRoles, type TaskRecord } from '../store/types.js'
import { changeTask, notifyTask } from './records.js'
import type { TaskLeases } from './leases.js'
import { TASKS_CAPABILITY, TASKS_EXTENSION, clientTakesTasks } from './runner.js'
import { ownValue } from '../core/json-limits.js'
import { isThenable, type MaybePromise } from '../core/maybe-promise.js'

/**
 * The Tasks extension's methods, whichever face calls them (`GET /tasks/{id}` and its siblings, or
 * `tasks/get`, `tasks/update`, `tasks/cancel` on /mcp). A task belongs to its creator: anyone else's,
 * like an unknown or expired one, is 404 -32602 (the extension's "unknown taskId").
 */
export const unknownTask = (taskId: string) => errors.unknownTask(taskId)

/** What finding a task needs: the store's roles, and the lease a recovering instance takes. */
export interface TaskDeps {
  readonly store: Pick<StoreRoles, 'tasks' | 'mailbox' | 'signals'>
  readonly leases: Pick<TaskLeases, 'until'>
}

/**
 * tasks/get: the task record (see `detailedTask` for its wire form); at once when the store answers at
 * once. A task whose lease lapsed (see {@link lapsed}) is recovered first, and read again.
 */
export function findTask(deps: TaskDeps, owner: string, taskId: string): MaybePromise<TaskRecord> {
  const task = deps.store.tasks.getTask(owner, taskId)
  if (isThenable(task)) return Promise.resolve(task).then((t) => (t !== undefined && lapsed(t) ? recoveredTask(deps, owner, taskId) : found(t, taskId)))
  return task !== undefined && lapsed(task) ? recoveredTask(deps, owner, taskId) : found(task, taskId)
}

/** A lapsed task once recovered (see {@link recoverLapsed}), read again. Not a closure in findTask: every poll would make one. */
async function recoveredTask({ store, leases }: TaskDeps, owner: string, taskId: string): Promise<TaskRecord> {
  await recoverLapsed(store, leases, owner, taskId)
  return found(await store.tasks.getTask(owner, taskId), taskId)
}

function found(task: TaskRecord | undefined, taskId: string): TaskRecord {
  if (task === undefined) throw unknownTask(taskId)
  return task
}

/** How a task that lost the instance running it ends (see {@link lapsed}). */
export const INSTANCE_LOST = { code: -32603, message: 'The server instance running this task stopped before it finished' } as const

/**
 * A task whose lease lapsed: the instance that held it (running its work, or queueing its end's
 * notification) stopped renewing it (it died, or has not reached the store for a whole lease), so
 * nothing else will finish it. Instances' clocks are compared: the lease (60 s by default) must be
 * far longer than their skew.
 */
export function lapsed(task: { status: TaskRecord['status']; leaseUntil?: number; notifyPending?: boolean }, now = Date.now()): boolean {
  return task.leaseUntil !== undefined && task.leaseUntil < now && (!TERMINAL.has(task.status) || task.notifyPending === true)
}

/**
 * Take a task whose lease lapsed and finish what its instance left: a running task fails, saying
 * why (and is notified as any change is); an end whose notification is pending is notified. Taking
 * it is fenced in the store (`takeLapsedTask`): of the instances that find it at once, one acts, and
 * holds a lease meanwhile, so that if it dies too, the next one does. Called by a read that finds
 * the task lapsed, and by every instance's sweep (`TaskLeases`) for tasks nobody reads.
 */
export async function recoverLapsed(store: Pick<StoreRoles, 'tasks' | 'mailbox'>, leases: Pick<TaskLeases, 'until'>, owner: string, taskId: string): Promise<void> {
  const task = await store.tasks.takeLapsedTask(owner, taskId, Date.now(), leases.until())
  if (task === undefined) return
  if (TERMINAL.has(task.status)) return notifyTask(store, owner, task)
  await changeTask(store, owner, taskId, { status: 'failed', statusMessage: INSTANCE_LOST.message, error: { ...INSTANCE_LOST }, inputRequests: undefined })
}

/**
 * tasks/update: answers to the task's outstanding `inputRequests`, each checked against its question
 * (400 -32602 naming the key); keys that name no outstanding request are ignored, and a partial
 * answer leaves the task `input_required` with the rest.
 */
export async function answerTask(deps: TaskDeps, owner: string, taskId: string, inputResponses: Record<string, Record<string, unknown>>): Promise<void> {
  const { store } = deps
  const task = await findTask(deps, owner, taskId)
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
export async function cancelTask(deps: TaskDeps, owner: string, taskId: string): Promise<void> {
  const { store } = deps
  const task = await findTask(deps, owner, taskId)
  await changeTask(store, owner, task.taskId, { status: 'cancelled', statusMessage: 'Cancelled by the client', inputRequests: undefined })
  await store.signals.publishCancel(owner, `task:${task.taskId}`, 'Cancelled by the client')
}

/** 400 -32021 naming the extension, for a client that did not declare it (the JSON-RPC face's gate). */
export function requireTasks(ctx: RequestContext): void {
  if (!clientTakesTasks(ctx.clientCapabilities)) {
    throw errors.missingCapability(TASKS_CAPABILITY, `The tasks methods need the ${TASKS_EXTENSION} extension: declare it in the client capabilities`)
  }
}
