import { CallContext } from '../core/call-context.js'
import type { Cancellations } from '../core/cancellations.js'
import { ConfigurationError, messageOf, wireErrorOf } from '../errors.js'
import { isPlainObject } from '../headers.js'
import type { LoggingLevel } from '../schema/lifecycle.js'
import { isQuestion, questionFor, type Question } from '../mrtr/questions.js'
import { toOutcome } from '../mrtr/outcome.js'
import type { StoreRoles, TaskRecord } from '../store/types.js'
import { requireCapabilities } from '../messaging/notify.js'
import { changeTask, newTaskId, outage, persistently, type TaskContext, type TaskOptions } from './records.js'
import type { TaskLeases } from './leases.js'

export { TASKS_CAPABILITY, TASKS_EXTENSION, clientTakesTasks, createTaskResult, detailedTask } from './records.js'
export type { TaskContext, TaskOptions } from './records.js'

/** What running a task needs of the server: the store's task and mailbox roles, cancellation, leases. */
export interface TaskServices {
  readonly store: Pick<StoreRoles, 'tasks' | 'mailbox'>
  readonly cancellations: Cancellations
  readonly taskLeases: TaskLeases
}

type Update = (patch: Partial<TaskRecord>) => Promise<void>

/**
 * `ctx.task`: made with `new`, not as an object literal. V8 may decide, from what it finds alive at a
 * scavenge, that a literal's objects live long, and allocate them in the old generation from then on
 * (allocation-site pretenuring): at start, with a hundred tasks running at once, it did for this one.
 * Each `ctx.task` was then born old, and its `status` closure kept the task's whole run (its context,
 * its closures, the request's parsed body) alive through every scavenge until a full collection:
 * ~1.5 KB promoted a task (bench/README.md, "What the garbage collector showed"). V8 keeps no
 * allocation site for an instance of a class.
 */
class TaskHandle {
  readonly status: (message: string) => Promise<void>

  constructor(readonly id: string, update: Update) {
    this.status = (message) => update({ statusMessage: message })
  }
}

/**
 * A task's view of the call that started it: its signal follows tasks/cancel (not the HTTP request,
 * which is answered at once), it has no deadline, progress becomes the status message, and
 * questions become the task's `inputRequests`, answered by tasks/update.
 */
class TaskCallContext extends CallContext implements TaskContext {
  readonly task: TaskContext['task']

  constructor(from: CallContext, taskId: string, readonly update: Update) {
    // The request's own fields, not its transport watch: the task outlives the HTTP response.
    const { requestId, protocolVersion, era, meta, clientCapabilities, principal, log } = from
    super({ requestId, protocolVersion, era, meta, clientCapabilities, principal, log, deadline: Number.POSITIVE_INFINITY }, from.outlet)
    this.resolved = from.resolved
    this.resumed = from.resumed
    this.task = new TaskHandle(taskId, update)
  }

  override async progress(progress: number, total?: number, message?: string): Promise<void> {
    await this.update({ statusMessage: message ?? (total === undefined ? `${progress}` : `${progress}/${total}`) })
  }

  // notifications/message is not supported on tasks (the extension); the server log keeps it.
  override async sendLog(level: LoggingLevel, data: unknown): Promise<void> {
    this.log.info({ level, data, task: this.task.id }, 'task log')
  }
}

/**
 * Create a task (durably: the store resolves only when any instance can read it) and run `work` in
 * the background with a context of its own (see {@link TaskCallContext}).
 *
 * Nothing that outlives this call refers to `ctx`, the HTTP request's context: it reaches the
 * request and its response (the abort watch), which a task running for an hour would otherwise keep.
 * The run and `finish` use the task's own context instead. A promise chained, not an async function:
 * every task of every instance is created here (an async frame is one more object alive per call).
 */
export function startTask<T>(
  svc: TaskServices,
  ctx: CallContext,
  options: TaskOptions,
  work: (ctx: CallContext & TaskContext) => T | Promise<T>,
  finish: (value: T, ctx: CallContext & TaskContext) => Record<string, unknown>
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
    // Kept only when asked for: absent is false to every reader, and a field fewer in each record.
    notify: options.notify || undefined,
    leaseUntil: svc.taskLeases.until()
  }
  let created: Promise<void>
  try {
    created = svc.store.tasks.createTask(owner, task)
  } catch (err) {
    return Promise.reject(err)
  }
  return created.then(() => {
    runTask(svc, ctx, owner, task, work, finish)
    return task
  })
}

/**
 * Run a created task's work in the background, with its own context, to its terminal status. `from`
 * is read once, for the task's context: no closure here refers to it (their context is this call's).
 */
function runTask<T>(
  svc: TaskServices,
  from: CallContext,
  owner: string,
  task: TaskRecord,
  work: (ctx: CallContext & TaskContext) => T | Promise<T>,
  finish: (value: T, ctx: CallContext & TaskContext) => Record<string, unknown>
): void {
  const { store } = svc
  const deadline = Date.parse(task.createdAt) + task.ttlMs
  // What must be recorded (questions, the end) is written until the store takes it; what only
  // informs (progress, status messages) is dropped while the store does not answer: the work goes on.
  const record: Update = (patch) => changeTask(store, owner, task.taskId, patch, { deadline, log: taskCtx.log })
  const inform: Update = (patch) => changeTask(store, owner, task.taskId, patch).catch((err: unknown) => {
    if (!outage(err)) throw err
  })
  const taskCtx = new TaskCallContext(from, task.taskId, inform)
  const release = svc.cancellations.track(owner, `task:${task.taskId}`, taskCtx, 'The task was cancelled')
  const unlease = svc.taskLeases.hold(owner, task.taskId)
  let rounds = 0
  const ask = async (questions: Map<string, Question<unknown>>): Promise<Record<string, Record<string, unknown>>> => {
    // Keys are unique over the task's life (the extension requires it): the round prefixes them.
    // Never ask what the client did not declare: the task fails with -32021 instead of waiting forever.
    requireCapabilities(questions.values(), taskCtx)
    const round = ++rounds
    const keys = new Map([...questions.keys()].map((k) => [`${round}.${k}`, k]))
    const inputRequests = Object.fromEntries([...keys].map(([wire, k]) => [wire, questions.get(k)!.request]))
    await record({ status: 'input_required', inputRequests })
    const answers = await persistently(() => store.tasks.awaitTaskAnswers(owner, task.taskId, [...keys.keys()], taskCtx.signal), deadline, taskCtx.log, task.taskId)
    return Object.fromEntries([...keys].map(([wire, k]) => [k, answers[wire]!]))
  }
  // A handler called again (after a hand-rolled input_required) replays its earlier asks: the same
  // question at the same position gets the answer it got before instead of being asked again.
  let answered: Map<number, { digest: string; answer: Record<string, unknown> }> | undefined
  let position = 0
  taskCtx.ask = async (q) => {
    const at = position++
    const known = answered?.get(at)
    if (known !== undefined && known.digest === q.digest) return toOutcome(q, known.answer)
    const answer = (await ask(new Map([['q', q]]))).q!
    ;(answered ??= new Map()).set(at, { digest: q.digest, answer })
    return toOutcome(q, answer)
  }

  void (async () => {
    try {
      let out = await work(taskCtx)
      // A hand-rolled handler may answer input_required inside a task: ask, then call it again.
      for (let round = 0; isPlainObject(out) && out.resultType === 'input_required'; round++) {
        const requests = (out as { inputRequests?: Record<string, unknown> }).inputRequests ?? {}
        if (Object.keys(requests).length === 0) throw new ConfigurationError('input_required in a task needs inputRequests')
        const questions = new Map(Object.entries(requests).map(([k, v]) => [k, isQuestion(v) ? v : questionFor(v as never)]))
        taskCtx.inputResponses = await ask(questions)
        taskCtx.requestState = (out as { state?: unknown }).state
        position = 0
        out = await work(taskCtx)
      }
      await record({ status: 'completed', result: finish(out, taskCtx) })
    } catch (err) {
      const wire = wireErrorOf(err)
      if (taskCtx.signal.aborted) {
        await record({ status: 'cancelled', statusMessage: String((taskCtx.signal.reason as Error).message) })
      } else if (wire !== undefined) {
        await record({ status: 'failed', error: wire.toJSON() as TaskRecord['error'] & object, statusMessage: wire.message })
      } else if (err instanceof ConfigurationError) {
        taskCtx.log.error({ err, task: task.taskId }, 'task misuses the library')
        await record({ status: 'failed', error: { code: -32603, message: 'Internal error' } })
      } else {
        // A tool that fails is a completed task with an isError result, as a direct call would be.
        const text = messageOf(err)
        await record({ status: 'completed', result: { content: [{ type: 'text', text }], isError: true } })
      }
    } finally {
      release()
      unlease()
    }
  })().catch((err: unknown) => taskCtx.log.error({ err, task: task.taskId }, 'could not record the end of a task'))
}
