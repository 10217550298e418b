/** The loops of a call: multi round-trip requests, resume tokens, and polling a task to its end. */
import type { HttpExchange } from './exchange.js'
import type { CallToolResult, CreateTaskResult, Task } from './results.js'
import { McpHttpError, type CallToolOptions, type InputRequest, type Json } from './types.js'

/** What polling a task needs of the client (declared here, so this module imports no client class). */
export interface TaskClient extends HttpExchange {
  updateTask(taskId: string, inputResponses: Json, options?: { signal?: AbortSignal }): Promise<void>
  cancelTask(taskId: string): Promise<void>
}

/** Answers a set of keyed input requests (the client's handlers). */
export type AnswerAll = (requests: Record<string, InputRequest>, context: { signal?: AbortSignal }) => Promise<Json>

/** Send, and while the answer is `input_required`, answer its questions and send again (at most `maxRounds`). */
export async function rounds<T extends Json>(maxRounds: number, answerAll: AnswerAll, signal: AbortSignal | undefined, send: (retry: Json) => Promise<T>): Promise<T> {
  let result = await send({})
  for (let round = 1; result.resultType === 'input_required'; round++) {
    if (round >= maxRounds) throw new McpHttpError(`Still input_required after ${maxRounds} rounds`, -32603, 200)
    result = await send({ inputResponses: await answerAll(result.inputRequests ?? {}, { signal }), requestState: result.requestState })
  }
  return result
}

/** Follow `_meta.nextResumeToken` to the last part; the parts' `key` arrays are concatenated. */
export async function resumed<T extends Json>(key: 'content' | 'contents', run: (resume?: Json) => Promise<T>): Promise<T> {
  let result = await run()
  const parts: unknown[] = [...((result[key] as unknown[] | undefined) ?? [])]
  let token = result._meta?.nextResumeToken
  if (typeof token !== 'string') return result
  while (typeof token === 'string') {
    result = await run({ resumeToken: token })
    parts.push(...((result[key] as unknown[] | undefined) ?? []))
    token = result._meta?.nextResumeToken
  }
  return { ...result, [key]: parts }
}

/** Poll the task to its end; aborted, the task is cancelled on the server before this rejects. */
export async function awaitTask(x: TaskClient, answerAll: AnswerAll, task: Task, headers: Headers, options: CallToolOptions): Promise<CallToolResult> {
  try {
    return await pollTask(x, answerAll, task, headers, options)
  } catch (err) {
    if (options.signal?.aborted === true) await x.cancelTask(task.taskId).catch(() => undefined)
    throw err
  }
}

async function pollTask(x: TaskClient, answerAll: AnswerAll, task: Task, headers: Headers, options: CallToolOptions): Promise<CallToolResult> {
  const { signal } = options
  let etag: string | null = null
  const asked = new Set<string>()
  const path = `/tasks/${encodeURIComponent(task.taskId)}`
  for (;;) {
    options.onTask?.(task)
    if (task.status === 'completed') return task.result as CallToolResult
    if (task.status === 'failed') throw new McpHttpError(task.error?.message ?? 'Task failed', task.error?.code ?? -32603, 200, task.error?.data)
    if (task.status === 'cancelled') throw new McpHttpError(task.statusMessage ?? 'Task cancelled', -32800, 200)
    const open = Object.entries(task.inputRequests ?? {}).filter(([key]) => !asked.has(key))
    if (open.length > 0) {
      for (const [key] of open) asked.add(key)
      await x.updateTask(task.taskId, await answerAll(Object.fromEntries(open), { signal }), { signal })
    }
    await x.pause(pollDelay(task, headers), signal)
    const res = await x.get(path, { signal, headers: etag === null ? {} : { 'if-none-match': etag } })
    headers = res.headers
    if (res.status !== 304) {
      task = res.body
      etag = res.headers.get('etag')
    }
  }
}

function pollDelay(task: Task, headers: Headers): number {
  if (typeof task.pollIntervalMs === 'number') return task.pollIntervalMs
  const after = Number(headers.get('retry-after') ?? NaN)
  return Number.isFinite(after) ? after * 1000 : 1000
}

/** True for the `CreateTaskResult` a `callTool(..., { wait: false })` answers when the call became a task. */
export function isTask(result: CallToolResult | CreateTaskResult): result is CreateTaskResult {
  return result.resultType === 'task'
}
