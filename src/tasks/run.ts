import { randomFillSync } from 'node:crypto'
import { derive, type RequestContext } from '../core/context.js'
import { ConfigurationError, messageOf, wireErrorOf } from '../errors.js'
import { isPlainObject } from '../headers.js'
import { elicit, isQuestion, listRoots, questionFor, sample, type Question } from '../mrtr/questions.js'
import type { RetryContext } from '../mrtr/run.js'
import type { Store, TaskRecord } from '../store/types.js'
import { requireCapabilities } from '../messaging/notify.js'

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

// Running tasks per store, so tasks/cancel heard by the store (on any instance) reaches the runner.
/**
 * A fresh random 128-bit task id (base64url). Taken from a pool filled 256 at a time, as the
 * sealer's IVs are: a randomBytes(16) per task was a system call each.
 */
const ID_POOL = 256
const idPool = Buffer.alloc(16 * ID_POOL)
let idAt = ID_POOL
function newTaskId(): string {
  if (idAt === ID_POOL) {
    randomFillSync(idPool)
    idAt = 0
  }
  // The first byte's top bit cleared: an id begins with a letter (A-Z, a-f), never with '-', so a
  // command line (`mcp-http tasks get <id>`) never takes it for an option. 127 random bits remain.
  idPool[16 * idAt]! &= 0x7f
  return idPool.toString('base64url', 16 * idAt, 16 * ++idAt)
}

const running = new WeakMap<Store, Map<string, AbortController>>()

function registry(store: Store): Map<string, AbortController> {
  let map = running.get(store)
  if (map === undefined) {
    const created = new Map<string, AbortController>()
    store.onCancel((owner, id, reason) => created.get(`${owner}\0${id}`)?.abort(new Error(reason ?? 'The task was cancelled')))
    running.set(store, (map = created))
  }
  return map
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
  const { notify: _notify, ...wire } = t
  return wire
}

/**
 * Create a task (durably: the store resolves only when any instance can read it) and run `work` in
 * the background with a context of its own: its signal follows tasks/cancel (not the HTTP request
 * that created it, which is answered at once), progress becomes the status message, and questions
 * become the task's `inputRequests`, answered by tasks/update.
 */
export async function startTask<T>(
  store: Store,
  ctx: RequestContext,
  options: TaskOptions,
  work: (ctx: RetryContext & TaskContext) => Promise<T>,
  finish: (value: T) => Record<string, unknown>
): Promise<TaskRecord> {
  const now = new Date().toISOString()
  const owner = ctx.principal.id
  const task: TaskRecord = {
    taskId: newTaskId(),
    status: 'working',
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: options.ttlMs,
    pollIntervalMs: options.pollIntervalMs,
    notify: options.notify
  }
  await store.createTask(owner, task)
  const controller = new AbortController()
  const tasks = registry(store)
  const key = `${owner}\0task:${task.taskId}`
  tasks.set(key, controller)

  const update = async (patch: Partial<TaskRecord>) => {
    const t = await store.updateTask(owner, task.taskId, patch)
    if (t?.notify === true) await store.pushNotification(owner, { method: 'notifications/tasks', params: detailedTask(t) })
    return t
  }
  let rounds = 0
  const ask = async (questions: Map<string, Question<unknown>>): Promise<Record<string, Record<string, unknown>>> => {
    // Keys are unique over the task's life (the extension requires it): the round prefixes them.
    // Never ask what the client did not declare: the task fails with -32021 instead of waiting forever.
    requireCapabilities(questions.values(), ctx)
    const round = ++rounds
    const keys = new Map([...questions.keys()].map((k) => [`${round}.${k}`, k]))
    const inputRequests = Object.fromEntries([...keys].map(([wire, k]) => [wire, questions.get(k)!.request]))
    await update({ status: 'input_required', inputRequests })
    const answers = await store.awaitTaskAnswers(owner, task.taskId, [...keys.keys()], controller.signal)
    return Object.fromEntries([...keys].map(([wire, k]) => [k, answers[wire]!]))
  }
  // A handler called again (after a hand-rolled input_required) replays its earlier asks: the same
  // question at the same position gets the answer it got before instead of being asked again.
  const answered = new Map<number, { digest: string; answer: Record<string, unknown> }>()
  let position = 0
  const one = async (q: Question<unknown>) => {
    const at = position++
    const known = answered.get(at)
    if (known !== undefined && known.digest === q.digest) return known.answer
    const answer = (await ask(new Map([['q', q]]))).q!
    answered.set(at, { digest: q.digest, answer })
    return answer
  }
  const taskCtx = derive(ctx, {
    signal: controller.signal,
    // A task is not bound to an HTTP request's time.
    deadline: Number.POSITIVE_INFINITY,
    inputResponses: undefined,
    requestState: undefined,
    resolved: (ctx as RetryContext).resolved,
    progress: async (progress: number, total?: number, message?: string) => {
      await update({ statusMessage: message ?? (total === undefined ? `${progress}` : `${progress}/${total}`) })
    },
    // notifications/message is not supported on tasks (the extension); the server log keeps it.
    sendLog: async (level: string, data: unknown) => ctx.log.info({ level, data, task: task.taskId }, 'task log'),
    elicit: async (message: string, schema: Parameters<typeof elicit>[1]) => one(elicit(message, schema)),
    sample: async (p: Parameters<typeof sample>[0]) => one(sample(p)),
    listRoots: async () => (await one(listRoots())).roots,
    task: { id: task.taskId, status: async (message: string) => void (await update({ statusMessage: message })) }
  }) as unknown as RetryContext & TaskContext

  void (async () => {
    try {
      let out = await work(taskCtx)
      // A hand-rolled handler may answer input_required inside a task: ask, then call it again.
      for (let round = 0; isPlainObject(out) && out.resultType === 'input_required'; round++) {
        const requests = (out as { inputRequests?: Record<string, unknown> }).inputRequests ?? {}
        if (Object.keys(requests).length === 0) throw new ConfigurationError('input_required in a task needs inputRequests')
        const questions = new Map(Object.entries(requests).map(([k, v]) => [k, isQuestion(v) ? v : questionFor(v as never)]))
        const inputResponses = await ask(questions)
        position = 0
        out = await work(derive(taskCtx, { inputResponses, requestState: (out as { state?: unknown }).state }))
      }
      await update({ status: 'completed', result: finish(out) })
    } catch (err) {
      const wire = wireErrorOf(err)
      if (controller.signal.aborted) {
        await update({ status: 'cancelled', statusMessage: String((controller.signal.reason as Error).message) })
      } else if (wire !== undefined) {
        await update({ status: 'failed', error: wire.toJSON() as TaskRecord['error'] & object, statusMessage: wire.message })
      } else if (err instanceof ConfigurationError) {
        ctx.log.error({ err, task: task.taskId }, 'task misuses the library')
        await update({ status: 'failed', error: { code: -32603, message: 'Internal error' } })
      } else {
        // A tool that fails is a completed task with an isError result, as a direct call would be.
        const text = messageOf(err)
        await update({ status: 'completed', result: { content: [{ type: 'text', text }], isError: true } })
      }
    } finally {
      tasks.delete(key)
    }
  })().catch((err: unknown) => ctx.log.error({ err, task: task.taskId }, 'could not record the end of a task'))
  return task
}
