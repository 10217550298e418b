import { randomFillSync } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from '../core/request-context.js'
import { NotReplicated, StoreUnavailable } from '../store/store-errors.js'
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
  const { notify: _notify, leaseUntil: _lease, notifyPending: _pending, ...wire } = t
  return wire
}

/** A store that does not answer for now (down, failing over, not replicated yet): worth trying again. */
export const outage = (err: unknown): boolean => err instanceof StoreUnavailable || err instanceof NotReplicated

/**
 * `write` until the store takes it, again after 0.1 s, 0.2 s ... at most 5 s apart while the store does
 * not answer, until `deadline` (the task's expiry: after it nobody can read the task anyway). Other
 * errors at once. What a task must record (its questions, its end) survives a store outage this way.
 */
export async function persistently<T>(write: () => Promise<T>, deadline: number, log: Logger, taskId: string): Promise<T> {
  for (let delay = 100, told = false; ; delay = Math.min(2 * delay, 5000)) {
    try {
      return await write()
    } catch (err) {
      if (!outage(err) || Date.now() + delay >= deadline) throw err
      if (!told) log.warn({ err, task: taskId }, 'task: the store does not answer; trying again until it does')
      told = true
      await sleep(delay, undefined, { ref: false })
    }
  }
  /* c8 ignore next: the loop ends only by return or throw, but V8 counts a continuation after it */
}

/** How a change is written: at once (its error is the caller's answer), or each write {@link persistently}. */
export interface Persist {
  deadline: number
  log: Logger
}

type Write = <T>(write: () => Promise<T>) => Promise<T>
const once: Write = (write) => write()

/**
 * Change a task (`TaskStore.updateTask`: a terminal task stays as it is) and, when its creator asked
 * for them (`notify`), queue notifications/tasks with the task as it now is. Every status change
 * goes through here: the runner's (`persist`: each write until the store takes it), tasks/cancel's
 * and a lapsed task's failure.
 *
 * The change and its notification are two writes (the notification may go to a webhook's store). An
 * end is marked `notifyPending` in the same write as the change, and the mark cleared once the
 * notification is queued; the task's lease guards the gap: whoever dies in it leaves a lapsed lease
 * behind, and another instance queues the notification ({@link TaskStore.takeLapsedTask}).
 * A change tried again may find the task already as it left it (the first attempt was written, its
 * answer lost): then the task as it is now is notified, once more rather than never (clients take
 * notifications/tasks as the task's latest state).
 */
export async function changeTask(
  store: Pick<StoreRoles, 'tasks' | 'mailbox'>,
  owner: string,
  taskId: string,
  patch: Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>,
  persist?: Persist
): Promise<void> {
  const write: Write = persist === undefined ? once : (w) => persistently(w, persist.deadline, persist.log, taskId)
  let tries = 0
  let changed = await write(() => {
    tries++
    return store.tasks.updateTask(owner, taskId, patch)
  })
  if (changed === undefined && tries > 1) changed = await write(async () => store.tasks.getTask(owner, taskId))
  if (changed !== undefined && changed !== true) await notifyTask(store, owner, changed, write)
}

/** Queue notifications/tasks with `task` as it is, when its creator asked; then clear its `notifyPending`. */
export async function notifyTask(store: Pick<StoreRoles, 'tasks' | 'mailbox'>, owner: string, task: TaskRecord, write: Write = once): Promise<void> {
  if (task.notify !== true) return
  await write(() => store.mailbox.pushNotification(owner, { method: 'notifications/tasks', params: detailedTask(task) }))
  if (task.notifyPending === true) await write(() => store.tasks.notifiedTask(owner, task.taskId))
}
