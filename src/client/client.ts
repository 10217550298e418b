import { randomUUID } from 'node:crypto'
import { encodeJsonHeader } from '../headers.js'
import {
  McpHttpError,
  reasonText,
  sleep,
  type CallOptions,
  type CallToolOptions,
  type ClientHandlers,
  type HandlerContext,
  type InputRequest,
  type Json,
  type PollOptions,
  type PureHttpClientOptions
} from './types.js'
import { deleteWebhook, listWebhooks, registerWebhook, type RegisteredWebhook } from './webhooks.js'

export * from './types.js'

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'
const META_VERSION = 'io.modelcontextprotocol/protocolVersion'
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'

interface Reply {
  status: number
  headers: Headers
  body: any
}

interface RequestOptions {
  body?: unknown
  headers?: Record<string, string>
  requestId?: string
  signal?: AbortSignal
  /** The request runs handlers: aborted in flight, it is cancelled on the server with notifications/cancelled. */
  cancellable?: boolean
  /** Overrides the client's `retry.attempts`. */
  attempts?: number
}

/** The lists, by their path: the key of the items in a page. */
const LISTS = { '/tools': 'tools', '/prompts': 'prompts', '/resources': 'resources', '/resources/templates': 'resourceTemplates' } as const
export type ListPath = keyof typeof LISTS

function parse(text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * A client of the Pure HTTP binding (SEP-1612) on `fetch`. Every MCP flow is one call: lists follow
 * cursors and revalidate with ETags, calls run the multi round-trip loop through the handlers, follow
 * resume tokens and wait for tasks. Every call takes `{ signal }` (see {@link CallOptions}).
 */
export class PureHttpClient {
  readonly url: string
  protocolVersion: string
  /** `Mcp-Session-Id` issued by `initialize`, sent on every later request. */
  sessionId: string | undefined
  /** The level `setLogLevel` chose; in 2026-07-28 it travels in each request's `_meta`. */
  logLevel: string | undefined
  private readonly token: string | undefined
  private readonly handlers: ClientHandlers
  private capabilities: Json
  private clientInfo: { name: string; version: string }
  private readonly attempts: number
  private readonly baseMs: number
  private readonly maxRounds: number
  private readonly cache = new Map<string, { etag: string; body: Json }>()
  private readonly answered = new Map<string, Json>()

  constructor(options: PureHttpClientOptions) {
    this.url = String(options.url).replace(/\/+$/, '')
    this.token = options.token
    this.protocolVersion = options.protocolVersion ?? '2026-07-28'
    this.handlers = options.handlers ?? {}
    this.clientInfo = options.clientInfo ?? { name: 'mcp-pure-http-client', version: '0.1.0' }
    this.attempts = Math.max(1, options.retry?.attempts ?? 3)
    this.baseMs = options.retry?.baseMs ?? 200
    this.maxRounds = options.maxRounds ?? 10
    const derived: Json = { extensions: { [TASKS_EXTENSION]: {} } }
    if (this.handlers.elicit !== undefined) derived.elicitation = {}
    if (this.handlers.sample !== undefined) derived.sampling = {}
    if (this.handlers.listRoots !== undefined) derived.roots = {}
    this.capabilities = { ...derived, ...options.capabilities }
  }

  /** The capabilities this client declares (settable: an adapter declares what its host declared). */
  get clientCapabilities(): Json {
    return this.capabilities
  }

  set clientCapabilities(capabilities: Json) {
    this.capabilities = capabilities
  }

  /** The `clientInfo` sent in `initialize` and the `_meta` envelope. */
  get info(): { name: string; version: string } {
    return this.clientInfo
  }

  set info(info: { name: string; version: string }) {
    this.clientInfo = info
  }

  /** True for 2025-06-18 and 2025-11-25: no `_meta` envelope; capabilities go in `initialize`. */
  get legacy(): boolean {
    return this.protocolVersion.startsWith('2025-')
  }

  // ---- transport ----

  /**
   * One HTTP exchange, retried on network errors, 503 and 429 with the same `Mcp-Request-Id`. Errors
   * throw `McpHttpError`; an abort throws `signal.reason`.
   */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Reply> {
    const { signal } = options
    signal?.throwIfAborted()
    const requestId = options.requestId ?? randomUUID()
    const headers: Record<string, string> = {
      'mcp-protocol-version': this.protocolVersion,
      'mcp-request-id': requestId,
      ...options.headers
    }
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId
    const init: RequestInit = { method, headers, signal }
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json'
      init.body = JSON.stringify(options.body)
    }
    const attempts = options.attempts ?? this.attempts
    let res: Response | undefined
    let text = ''
    for (let attempt = 1; res === undefined; attempt++) {
      let answer: Response
      try {
        answer = await fetch(this.url + path, init)
        text = await answer.text()
      } catch (err) {
        if (signal?.aborted === true) {
          if (options.cancellable === true) await this.cancelRequest(requestId, signal.reason)
          throw signal.reason
        }
        if (attempt >= attempts) throw err
        await this.pause(this.baseMs * 2 ** (attempt - 1), signal)
        continue
      }
      if ((answer.status === 503 || answer.status === 429) && attempt < attempts) {
        const after = Number(answer.headers.get('retry-after') ?? NaN)
        await this.pause(Number.isFinite(after) ? after * 1000 : this.baseMs * 2 ** (attempt - 1), signal)
        continue
      }
      res = answer
    }
    const body = text === '' ? undefined : parse(text)
    if (res.status >= 400) {
      const message = typeof body?.message === 'string' ? body.message : `HTTP ${res.status}`
      const code = typeof body?.code === 'number' ? body.code : -32603
      throw new McpHttpError(message, code, res.status, body?.data, requestId)
    }
    return { status: res.status, headers: res.headers, body }
  }

  private async pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    await sleep(ms, signal)
    signal?.throwIfAborted()
  }

  /** Tell the server to stop a request it runs (best effort: one attempt, failures ignored). */
  private async cancelRequest(requestId: string, reason: unknown): Promise<void> {
    const cancelled = { method: 'notifications/cancelled', params: { requestId, reason: reasonText(reason) } }
    await this.send('POST', '/notifications', { body: [cancelled], attempts: 1 }).catch(() => undefined)
  }

  /** The request's `_meta`: the 2026-07-28 envelope plus `extra`; in the legacy era only `extra`. */
  meta(extra?: Json): Json | undefined {
    if (this.legacy) return extra
    const meta: Json = {
      [META_VERSION]: this.protocolVersion,
      [META_CAPABILITIES]: this.capabilities,
      [META_CLIENT_INFO]: this.clientInfo
    }
    if (this.logLevel !== undefined) meta[META_LOG_LEVEL] = this.logLevel
    return { ...meta, ...extra }
  }

  private get(path: string, options: CallOptions & { headers?: Record<string, string>; cancellable?: boolean } = {}): Promise<Reply> {
    const meta = this.meta(options.meta)
    const headers = meta === undefined ? options.headers : { ...options.headers, 'mcp-meta': encodeJsonHeader(meta) }
    return this.send('GET', path, { headers, signal: options.signal, cancellable: options.cancellable })
  }

  private post(path: string, body: Json, options: CallOptions & { cancellable?: boolean } = {}): Promise<Reply> {
    return this.send('POST', path, { body: { ...body, _meta: this.meta(options.meta) }, signal: options.signal, cancellable: options.cancellable })
  }

  // ---- lifecycle ----

  /** `initialize` (legacy era): declares the capabilities for the logical connection; adopts the answered version and any `Mcp-Session-Id`. */
  async initialize(options: CallOptions = {}): Promise<Json> {
    const res = await this.send('POST', '/initialize', {
      body: { protocolVersion: this.protocolVersion, capabilities: this.capabilities, clientInfo: this.clientInfo },
      signal: options.signal
    })
    this.protocolVersion = res.body.protocolVersion
    this.sessionId = res.headers.get('mcp-session-id') ?? this.sessionId
    return res.body
  }

  /** `server/discover`. */
  async discover(options: CallOptions = {}): Promise<Json> {
    return (await this.get('/discover', options)).body
  }

  async ping(options: CallOptions = {}): Promise<void> {
    await this.get('/ping', options)
  }

  /** `logging/setLevel`: `POST /logLevel` for the connection; in 2026-07-28 also the `_meta` level of every later request. */
  async setLogLevel(level: string, options: CallOptions = {}): Promise<void> {
    await this.post('/logLevel', { level }, options)
    this.logLevel = level
  }

  /** Client notifications (`notifications/roots/list_changed`, ...) in the body of `POST /notifications`. */
  async notify(notifications: Json[], options: CallOptions = {}): Promise<void> {
    await this.send('POST', '/notifications', { body: notifications, signal: options.signal })
  }

  // ---- lists ----

  /** One page of a list, from the ETag cache when the server answers 304. */
  async page(path: ListPath, cursor?: string, options: CallOptions = {}): Promise<Json> {
    const url = cursor === undefined ? path : `${path}?cursor=${encodeURIComponent(cursor)}`
    const known = this.cache.get(url)
    const res = await this.get(url, { ...options, headers: known === undefined ? {} : { 'if-none-match': known.etag } })
    if (res.status === 304) return known!.body
    const etag = res.headers.get('etag')
    if (etag !== null) this.cache.set(url, { etag, body: res.body })
    return res.body
  }

  private async list(path: ListPath, options: CallOptions): Promise<Json[]> {
    const items: Json[] = []
    let cursor: unknown
    do {
      const page = await this.page(path, typeof cursor === 'string' ? cursor : undefined, options)
      items.push(...(page[LISTS[path]] as Json[]))
      cursor = page.nextCursor
    } while (typeof cursor === 'string')
    return items
  }

  /** Every tool, across pages; unchanged pages come from the ETag cache (304). */
  listTools(options: CallOptions = {}): Promise<Json[]> {
    return this.list('/tools', options)
  }

  listPrompts(options: CallOptions = {}): Promise<Json[]> {
    return this.list('/prompts', options)
  }

  listResources(options: CallOptions = {}): Promise<Json[]> {
    return this.list('/resources', options)
  }

  listResourceTemplates(options: CallOptions = {}): Promise<Json[]> {
    return this.list('/resources/templates', options)
  }

  // ---- operations ----

  /**
   * `tools/call`, whole: `input_required` rounds answered by the handlers, resume tokens followed
   * (the parts' `content` concatenated, the rest from the last part), and a task (202) polled to its
   * result. A failed or cancelled task throws `McpHttpError`; a tool error is a result with `isError`.
   */
  callTool(name: string, args: Json = {}, options: CallToolOptions = {}): Promise<Json> {
    const path = `/tools/${encodeURIComponent(name)}/calls`
    const { signal } = options
    const body: Json = { arguments: args }
    if (options.task !== undefined) body.task = options.task
    return this.resumed('content', (resume) =>
      this.rounds(signal, async (retry) => {
        const res = await this.post(path, { ...body, ...retry }, { signal, meta: { ...options.meta, ...resume }, cancellable: true })
        if (res.status !== 202) return res.body
        return options.wait === false ? res.body : this.awaitTask(res.body, res.headers, options)
      })
    )
  }

  /** `prompts/get` (GET with `Mcp-Arguments`; MRTR retries go by POST with a body). */
  getPrompt(name: string, args?: Record<string, string>, options: CallOptions = {}): Promise<Json> {
    return this.rounds(options.signal, (retry) => this.read(`/prompts/${encodeURIComponent(name)}`, retry, options, args))
  }

  /** `resources/read`, whole: MRTR rounds, and resume tokens followed (the parts' `contents` concatenated). */
  readResource(uri: string, options: CallOptions = {}): Promise<Json> {
    const path = `/resources/${encodeURIComponent(uri)}`
    return this.resumed('contents', (resume) => this.rounds(options.signal, (retry) => this.read(path, retry, { ...options, meta: { ...options.meta, ...resume } })))
  }

  private async read(path: string, retry: Json, options: CallOptions, args?: Json): Promise<Json> {
    if (retry.requestState !== undefined || retry.inputResponses !== undefined) {
      return (await this.post(path, { arguments: args, ...retry }, { ...options, cancellable: true })).body
    }
    const headers: Record<string, string> = args === undefined ? {} : { 'mcp-arguments': encodeJsonHeader(args) }
    return (await this.get(path, { ...options, headers, cancellable: true })).body
  }

  /** `completion/complete`. */
  async complete(ref: Json, argument: { name: string; value: string }, context?: Json, options: CallOptions = {}): Promise<Json> {
    return (await this.post('/completions', { ref, argument, context }, options)).body
  }

  async subscribe(uri: string, options: CallOptions = {}): Promise<void> {
    await this.post('/resources/subscribe', { uri }, options)
  }

  async unsubscribe(uri: string, options: CallOptions = {}): Promise<void> {
    await this.post('/resources/unsubscribe', { uri }, options)
  }

  // ---- webhooks (src/client/webhooks.ts) ----

  /** `POST /webhooks`: notifications of this connection pushed to `url`; the answer's `secret` verifies them (`verifyWebhook`). */
  registerWebhook(url: string, events?: string[], options: CallOptions = {}): Promise<RegisteredWebhook> {
    return registerWebhook(this, url, events, options)
  }

  deleteWebhook(id: string, options: CallOptions = {}): Promise<void> {
    return deleteWebhook(this, id, options)
  }

  listWebhooks(options: CallOptions = {}): Promise<Json[]> {
    return listWebhooks(this, options)
  }

  // ---- tasks ----

  async getTask(taskId: string, options: CallOptions = {}): Promise<Json> {
    return (await this.get(`/tasks/${encodeURIComponent(taskId)}`, options)).body
  }

  async cancelTask(taskId: string, options: CallOptions = {}): Promise<void> {
    await this.post(`/tasks/${encodeURIComponent(taskId)}/cancel`, {}, options)
  }

  async updateTask(taskId: string, inputResponses: Json, options: CallOptions = {}): Promise<void> {
    await this.post(`/tasks/${encodeURIComponent(taskId)}/update`, { inputResponses }, options)
  }

  /** Wait for a task to end, answering its `input_required` through the handlers: its result, or `McpHttpError` when it failed or was cancelled. */
  async taskResult(taskId: string, options: CallToolOptions = {}): Promise<Json> {
    const res = await this.get(`/tasks/${encodeURIComponent(taskId)}`, { signal: options.signal })
    return this.awaitTask(res.body, res.headers, options)
  }

  /** Poll the task to its end; aborted, the task is cancelled on the server before this rejects. */
  private async awaitTask(task: Json, headers: Headers, options: CallToolOptions): Promise<Json> {
    try {
      return await this.pollTask(task, headers, options)
    } catch (err) {
      if (options.signal?.aborted === true) await this.cancelTask(task.taskId).catch(() => undefined)
      throw err
    }
  }

  private async pollTask(task: Json, headers: Headers, options: CallToolOptions): Promise<Json> {
    const { signal } = options
    let etag: string | null = null
    const asked = new Set<string>()
    const path = `/tasks/${encodeURIComponent(task.taskId)}`
    for (;;) {
      options.onTask?.(task)
      if (task.status === 'completed') return task.result
      if (task.status === 'failed') throw new McpHttpError(task.error?.message ?? 'Task failed', task.error?.code ?? -32603, 200, task.error?.data)
      if (task.status === 'cancelled') throw new McpHttpError(task.statusMessage ?? 'Task cancelled', -32800, 200)
      const open = Object.entries((task.inputRequests ?? {}) as Record<string, InputRequest>).filter(([key]) => !asked.has(key))
      if (open.length > 0) {
        for (const [key] of open) asked.add(key)
        await this.updateTask(task.taskId, await this.answerAll(Object.fromEntries(open), { signal }), { signal })
      }
      await this.pause(pollDelay(task, headers), signal)
      const res = await this.get(path, { signal, headers: etag === null ? {} : { 'if-none-match': etag } })
      headers = res.headers
      if (res.status !== 304) {
        task = res.body
        etag = res.headers.get('etag')
      }
    }
  }

  // ---- multi round-trip requests and resume tokens ----

  private async rounds(signal: AbortSignal | undefined, send: (retry: Json) => Promise<Json>): Promise<Json> {
    let result = await send({})
    for (let round = 1; result.resultType === 'input_required'; round++) {
      if (round >= this.maxRounds) throw new McpHttpError(`Still input_required after ${this.maxRounds} rounds`, -32603, 200)
      result = await send({ inputResponses: await this.answerAll(result.inputRequests ?? {}, { signal }), requestState: result.requestState })
    }
    return result
  }

  private async resumed(key: 'content' | 'contents', run: (resume?: Json) => Promise<Json>): Promise<Json> {
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
  async pollNotifications(onNotification?: PollOptions['onNotification'], options: CallOptions = {}): Promise<boolean> {
    const res = await this.get('/notifications', options)
    const group = res.headers.get('mcp-message-group')
    if (group === null) return false
    for (const n of res.body as Json[]) await onNotification?.(n)
    await this.send('POST', '/notifications', { headers: { 'mcp-message-group': group } })
    return true
  }

  /** One `POST /requests`: answer the request handed out, if any. True when there was one. */
  async pollRequests(options: CallOptions = {}): Promise<boolean> {
    const res = await this.send('POST', '/requests', { signal: options.signal })
    if (res.status === 204) return false
    const id = res.headers.get('mcp-request-id') as string
    let answer = this.answered.get(id)
    if (answer === undefined) {
      try {
        answer = await this.answer(res.body as InputRequest, { signal: options.signal })
      } catch (err) {
        const e = err as { code?: unknown; message: string }
        answer = { error: { code: typeof e.code === 'number' ? e.code : -32603, message: e.message } }
      }
      // Kept until the server has it: a redelivery after a lost answer is answered again, not asked again.
      this.answered.set(id, answer)
    }
    try {
      await this.send('POST', '/responses', { body: answer, requestId: id })
    } catch (err) {
      // 404: answered already (an earlier answer arrived after all), nothing left to do.
      if (!(err instanceof McpHttpError && err.status === 404)) throw err
    }
    this.answered.delete(id)
    return true
  }
}

function pollDelay(task: Json, headers: Headers): number {
  if (typeof task.pollIntervalMs === 'number') return task.pollIntervalMs
  const after = Number(headers.get('retry-after') ?? NaN)
  return Number.isFinite(after) ? after * 1000 : 1000
}
