import { HttpExchange } from './exchange.js'
import { awaitTask, type AnswerAll } from './flows.js'
import { pollNotifications, pollRequests } from './poller.js'
import type { CallToolResult, Task } from './results.js'
import { McpHttpError, sleep, type CallOptions, type CallToolOptions, type HandlerContext, type InputRequest, type Json, type PollOptions } from './types.js'

/**
 * The part of {@link PureHttpClient} that deals with what the server asks and what outlives a call:
 * answering questions through the handlers, the background poller, and tasks.
 */
export class AnsweringClient extends HttpExchange {
  private readonly answered = new Map<string, Json>()
  protected readonly answerAllBound: AnswerAll = this.answerAll.bind(this)

  // ---- tasks ----

  async getTask(taskId: string, options: CallOptions = {}): Promise<Task> {
    return (await this.get(`/tasks/${encodeURIComponent(taskId)}`, options)).body
  }

  async cancelTask(taskId: string, options: CallOptions = {}): Promise<void> {
    await this.post(`/tasks/${encodeURIComponent(taskId)}/cancel`, {}, options)
  }

  async updateTask(taskId: string, inputResponses: Json, options: CallOptions = {}): Promise<void> {
    await this.post(`/tasks/${encodeURIComponent(taskId)}/update`, { inputResponses }, options)
  }

  /** Wait for a task to end, answering its `input_required` through the handlers: its result, or `McpHttpError` when it failed or was cancelled. */
  async taskResult(taskId: string, options: CallToolOptions = {}): Promise<CallToolResult> {
    const res = await this.get(`/tasks/${encodeURIComponent(taskId)}`, { signal: options.signal })
    return awaitTask(this, this.answerAllBound, res.body, res.headers, options)
  }

  // ---- questions from the server ----

  /** Answer a set of keyed input requests through the handlers. */
  async answerAll(requests: Record<string, InputRequest>, context: HandlerContext = {}): Promise<Json> {
    const entries = await Promise.all(Object.entries(requests).map(async ([key, req]) => [key, await this.answer(req, context)] as const))
    return Object.fromEntries(entries)
  }

  /** Answer one server-to-client request through its handler; `McpHttpError` -32601 when there is none. */
  async answer(request: InputRequest, context: HandlerContext = {}): Promise<Json> {
    const h = this.handlers
    const params = request.params ?? {}
    if (request.method === 'elicitation/create' && h.elicit !== undefined) return h.elicit(params, context)
    if (request.method === 'sampling/createMessage' && h.sample !== undefined) return h.sample(params, context)
    if (request.method === 'roots/list' && h.listRoots !== undefined) return { roots: await h.listRoots(context) }
    throw new McpHttpError(`This client does not handle ${request.method}`, -32601, 0)
  }

  // ---- server-to-client messages ----

  /**
   * The background poller: `GET /notifications` (each group acknowledged after `onNotification` ran
   * for all of it) and `POST /requests` (answered through the handlers on `POST /responses`; a
   * redelivered id is answered again from memory, never run twice). Resolves when `signal` aborts;
   * rejects on an error that outlasted the retries.
   */
  async poll(options: PollOptions = {}): Promise<void> {
    const { signal } = options
    while (signal?.aborted !== true) {
      const notified = await this.pollNotifications(options.onNotification)
      const requested = await this.pollRequests()
      if (!notified && !requested) await sleep(options.intervalMs ?? 1000, signal)
    }
  }

  /** One `GET /notifications`: deliver the group, then acknowledge it. True when there was one. */
  pollNotifications(onNotification?: PollOptions['onNotification'], options: CallOptions = {}): Promise<boolean> {
    return pollNotifications(this, onNotification, options)
  }

  /** One `POST /requests`: answer the request handed out, if any. True when there was one. */
  pollRequests(options: CallOptions = {}): Promise<boolean> {
    return pollRequests(this, (request, context) => this.answer(request, context), this.answered, options)
  }
}
