import { randomFillSync } from 'node:crypto'
import type { StoreRoles, TaskRecord } from '../store/types.js'

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'
/** The capability a client declares (per request in 2026-07-28, in initialize before) to get tasks. */
export const TASKS_CAPABILITY = { extensions: { [TASKS_EXTENSION]: {} } }

export function clientTakesTasks(caps: Readonly<Record<string, unknown>> | undefined): boolean {
  const ext = caps?.extensions as Record<string, unknown> | undefined
  return (ext !== undefined && ext[TASKS_EXTENSION] !== undefined) || caps?.tasks !== undefined
}

/** What a task handler's context adds: its id, and a way to say what it is doing. */
export interface TaskContext {
  readonly task: { readonly id: string; status(message: string): Promise<void> }
}

export interface TaskOptions {
  ttlMs: number
  pollIntervalMs: number
  notify: boolean
}

/**
 * A fresh random 128-bit task id (base64url). Taken from a pool filled 256 at a time, as the
 * sealer's IVs are: a randomBytes(16) per task was a system call each.
 */
const ID_POOL = 256
const idPool = Buffer.alloc(16 * ID_POOL)
let idAt = ID_POOL
export function newTaskId(): string {
  if (idAt === ID_POOL) {
    randomFillSync(idPool)
    idAt = 0
  }
  // The first byte's top bit cleared: an id begins with a letter (A-Z, a-f), never with '-', so a
  // command line (`mcp-http tasks get <id>`) never takes it for an option. 127 random bits remain.
  idPool[16 * idAt]! &= 0x7f
  return idPool.toString('base64url', 16 * idAt, 16 * ++idAt)
}

/** The flat CreateTaskResult (the Tasks extension). */
export function createTaskResult(t: TaskRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {
    resultType: 'task',
    taskId: t.taskId,
    status: t.status,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttlMs: t.ttlMs,
    pollIntervalMs: t.pollIntervalMs
  }
  return out
}

/** The DetailedTask of tasks/get and notifications/tasks: the task with its result, error or input requests. */
export function detailedTask(t: TaskRecord): Record<string, unknown> {
  const { notify: _notify, leaseUntil: _lease, ...wire } = t
  return wire
}

/**
 * Change a task (`TaskStore.updateTask`: a terminal task stays as it is) and, when its creator asked
 * for them (`notify`), queue notifications/tasks with the task as it now is. Every status change
 * goes through here: the runner's, and tasks/cancel's.
 */
export function changeTask(
  store: Pick<StoreRoles, 'tasks' | 'mailbox'>,
  owner: string,
  taskId: string,
  patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>
): Promise<void> {
  // Chained, not async: every task changes status at least twice (an async frame each).
  return store.tasks.updateTask(owner, taskId, patch).then((t) => {
    if (t !== undefined && t !== true && t.notify === true) return store.mailbox.pushNotification(owner, { method: 'notifications/tasks', params: detailedTask(t) })
    return undefined
  })
}
