import { randomUUID } from 'node:crypto'
import { encodeJsonHeader } from '../headers.js'

/** A JSON object as it travels: params, results, `_meta`. */
export type Json = Record<string, any>

/** A server-to-client request: an MRTR or task `inputRequests` value, or one handed out by `POST /requests`. */
export interface InputRequest {
  method: string
  params?: Json
}

/** A root the client shares (`roots/list`). */
export interface ClientRoot {
  uri: string
  name?: string
}

/**
 * What the client answers when a server asks. Each handler present is declared as a capability
 * (`elicitation`, `sampling`, `roots`) in the `_meta` envelope (2026-07-28) or in `initialize`.
 */
export interface ClientHandlers {
  /** `elicitation/create`: return an `ElicitResult` (`{ action: 'accept', content }`, `{ action: 'decline' }`, ...). */
  elicit?: (params: Json) => Json | Promise<Json>
  /** `sampling/createMessage`: return a `CreateMessageResult`. */
  sample?: (params: Json) => Json | Promise<Json>
  /** `roots/list`: return the roots (the client wraps them as `{ roots }`). */
  listRoots?: () => ClientRoot[] | Promise<ClientRoot[]>
}

export interface PureHttpClientOptions {
  /** The server's base URL, with its prefix if any (`http://127.0.0.1:3000`, `https://host/mcp`). */
  url: string | URL
  /** A bearer token, sent as `Authorization: Bearer <token>`. */
  token?: string
  /** Default `2026-07-28`. A legacy version (2025-06-18, 2025-11-25) needs `initialize()` first. */
  protocolVersion?: string
  /** Extra client capabilities, merged over the ones derived from the handlers and the tasks extension. */
  capabilities?: Json
  clientInfo?: { name: string; version: string }
  handlers?: ClientHandlers
  /** Retries of network errors, 503 and 429: `attempts` in all (default 3), backoff `baseMs * 2^n` (default 200). */
  retry?: { attempts?: number; baseMs?: number }
  /** Most MRTR rounds of one call before giving up (default 10). */
  maxRounds?: number
}

export interface CallToolOptions {
  /** Called with the task on creation and on every poll, when the call runs as a task. */
  onTask?: (task: Json) => void
}

export interface PollOptions {
  /** Each server notification, in order. A group is acknowledged once all of its notifications were delivered. */
  onNotification?: (notification: Json) => void | Promise<void>
  /** Stops the loop; `poll()` then resolves. */
  signal?: AbortSignal
  /** Pause between polls that found nothing (default 1000 ms). */
  intervalMs?: number
}

/** An error answer of the server (or the client's refusal to go on): JSON-RPC `code`, HTTP `status` (0 when none). */
export class McpHttpError extends Error {
  override readonly name = 'McpHttpError'
  constructor(
    message: string,
    readonly code: number,
    readonly status: number,
    readonly data?: unknown,
    readonly requestId?: string
  ) {
    super(message)
  }
}

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'
const META_VERSION = 'io.modelcontextprotocol/protocolVersion'
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'

interface Reply {
  status: number
  headers: Headers
  body: any
}

interface RequestOptions {
  body?: unknown
  headers?: Record<string, string>
  requestId?: string
}

/** Pause `ms`, or less when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => (clearTimeout(timer), signal?.removeEventListener('abort', done), resolve())
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}

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
 * resume tokens and wait for tasks.
 */
export class PureHttpClient {
  readonly url: string
  protocolVersion: string
  /** `Mcp-Session-Id` issued by `initialize`, sent on every later request. */
  sessionId: string | undefined
  private readonly token: string | undefined
  private readonly handlers: ClientHandlers
  private readonly capabilities: Json
  private readonly clientInfo: { name: string; version: string }
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

  /** The capabilities this client declares. */
  get clientCapabilities(): Json {
    return this.capabilities
  }

  /** True for 2025-06-18 and 2025-11-25: no `_meta` envelope; capabilities go in `initialize`. */
  get legacy(): boolean {
    return this.protocolVersion.startsWith('2025-')
  }

  // ---- transport ----

  /** One HTTP exchange, retried on network errors, 503 and 429 with the same `Mcp-Request-Id`. Errors throw `McpHttpError`. */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Reply> {
    const requestId = options.requestId ?? randomUUID()
    const headers: Record<string, string> = {
      'mcp-protocol-version': this.protocolVersion,
      'mcp-request-id': requestId,
      ...options.headers
    }
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId
    const init: RequestInit = { method, headers }
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json'
      init.body = JSON.stringify(options.body)
    }
    let res: Response | undefined
    let text = ''
    for (let attempt = 1; res === undefined; attempt++) {
      let answer: Response
      try {
        answer = await fetch(this.url + path, init)
      } catch (err) {
        if (attempt >= this.attempts) throw err
        await sleep(this.baseMs * 2 ** (attempt - 1))
        continue
      }
      text = await answer.text()
      if ((answer.status === 503 || answer.status === 429) && attempt < this.attempts) {
        const after = Number(answer.headers.get('retry-after') ?? NaN)
        await sleep(Number.isFinite(after) ? after * 1000 : this.baseMs * 2 ** (attempt - 1))
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

  /** The request's `_meta`: the 2026-07-28 envelope plus `extra`; in the legacy era only `extra`. */
  meta(extra?: Json): Json | undefined {
    if (this.legacy) return extra
    return {
      [META_VERSION]: this.protocolVersion,
      [META_CAPABILITIES]: this.capabilities,
      [META_CLIENT_INFO]: this.clientInfo,
      ...extra
    }
  }

  private get(path: string, headers: Record<string, string> = {}, extra?: Json): Promise<Reply> {
    const meta = this.meta(extra)
    return this.send('GET', path, { headers: meta === undefined ? headers : { ...headers, 'mcp-meta': encodeJsonHeader(meta) } })
  }

  private post(path: string, body: Json = {}, extra?: Json): Promise<Reply> {
    return this.send('POST', path, { body: { ...body, _meta: this.meta(extra) } })
  }

  // ---- lifecycle ----

  /** `initialize` (legacy era): declares the capabilities for the logical connection; adopts the answered version and any `Mcp-Session-Id`. */
  async initialize(): Promise<Json> {
    const res = await this.send('POST', '/initialize', {
      body: { protocolVersion: this.protocolVersion, capabilities: this.capabilities, clientInfo: this.clientInfo }
    })
    this.protocolVersion = res.body.protocolVersion
    this.sessionId = res.headers.get('mcp-session-id') ?? this.sessionId
    return res.body
  }

  /** `server/discover`. */
  async discover(): Promise<Json> {
    return (await this.get('/discover')).body
  }

  async ping(): Promise<void> {
    await this.get('/ping')
  }

  async setLogLevel(level: string): Promise<void> {
    await this.post('/logLevel', { level })
  }

  // ---- lists ----

  private async cached(path: string): Promise<Json> {
    const known = this.cache.get(path)
    const res = await this.get(path, known === undefined ? {} : { 'if-none-match': known.etag })
    if (res.status === 304) return known!.body
    const etag = res.headers.get('etag')
    if (etag !== null) this.cache.set(path, { etag, body: res.body })
    return res.body
  }

  private async list(path: string, key: string): Promise<Json[]> {
    const items: Json[] = []
    let cursor: unknown
    do {
      const page = await this.cached(typeof cursor === 'string' ? `${path}?cursor=${encodeURIComponent(cursor)}` : path)
      items.push(...(page[key] as Json[]))
      cursor = page.nextCursor
    } while (typeof cursor === 'string')
    return items
  }

  /** Every tool, across pages; unchanged pages come from the ETag cache (304). */
  listTools(): Promise<Json[]> {
    return this.list('/tools', 'tools')
  }

  listPrompts(): Promise<Json[]> {
    return this.list('/prompts', 'prompts')
  }

  listResources(): Promise<Json[]> {
    return this.list('/resources', 'resources')
  }

  listResourceTemplates(): Promise<Json[]> {
    return this.list('/resources/templates', 'resourceTemplates')
  }

  // ---- operations ----

  /**
   * `tools/call`, whole: `input_required` rounds answered by the handlers, resume tokens followed
   * (the parts' `content` concatenated, the rest from the last part), and a task (202) polled to its
   * result. A failed or cancelled task throws `McpHttpError`; a tool error is a result with `isError`.
   */
  callTool(name: string, args: Json = {}, options: CallToolOptions = {}): Promise<Json> {
    const path = `/tools/${encodeURIComponent(name)}/calls`
    return this.resumed('content', (resume) =>
      this.rounds(async (retry) => {
        const res = await this.post(path, { arguments: args, ...retry }, resume)
        return res.status === 202 ? this.awaitTask(res, options) : res.body
      })
    )
  }

  /** `prompts/get` (GET with `Mcp-Arguments`; MRTR retries go by POST with a body). */
  getPrompt(name: string, args?: Record<string, string>): Promise<Json> {
    return this.rounds((retry) => this.read(`/prompts/${encodeURIComponent(name)}`, retry, args))
  }

  /** `resources/read`, whole: MRTR rounds, and resume tokens followed (the parts' `contents` concatenated). */
  readResource(uri: string): Promise<Json> {
    return this.resumed('contents', (resume) => this.rounds((retry) => this.read(`/resources/${encodeURIComponent(uri)}`, retry, undefined, resume)))
  }

  private async read(path: string, retry: Json, args?: Json, resume?: Json): Promise<Json> {
    if (retry.requestState !== undefined || retry.inputResponses !== undefined) {
      return (await this.post(path, { arguments: args, ...retry }, resume)).body
    }
    return (await this.get(path, args === undefined ? {} : { 'mcp-arguments': encodeJsonHeader(args) }, resume)).body
  }

  /** `completion/complete`. */
  async complete(ref: Json, argument: { name: string; value: string }, context?: Json): Promise<Json> {
    return (await this.post('/completions', { ref, argument, context })).body
  }

  async subscribe(uri: string): Promise<void> {
    await this.post('/resources/subscribe', { uri })
  }

  async unsubscribe(uri: string): Promise<void> {
    await this.post('/resources/unsubscribe', { uri })
  }

  // ---- tasks ----

  async getTask(taskId: string): Promise<Json> {
    return (await this.get(`/tasks/${encodeURIComponent(taskId)}`)).body
  }

  async cancelTask(taskId: string): Promise<void> {
    await this.post(`/tasks/${encodeURIComponent(taskId)}/cancel`)
  }

  async updateTask(taskId: string, inputResponses: Json): Promise<void> {
    await this.post(`/tasks/${encodeURIComponent(taskId)}/update`, { inputResponses })
  }

  private async awaitTask(created: Reply, options: CallToolOptions): Promise<Json> {
    let task: Json = created.body
    let headers = created.headers
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
        await this.updateTask(task.taskId, await this.answerAll(Object.fromEntries(open)))
      }
      await sleep(pollDelay(task, headers))
      const res = await this.get(path, etag === null ? {} : { 'if-none-match': etag })
      headers = res.headers
      if (res.status !== 304) {
        task = res.body
        etag = res.headers.get('etag')
      }
    }
  }

  // ---- multi round-trip requests and resume tokens ----

  private async rounds(send: (retry: Json) => Promise<Json>): Promise<Json> {
    let result = await send({})
    for (let round = 1; result.resultType === 'input_required'; round++) {
      if (round >= this.maxRounds) throw new McpHttpError(`Still input_required after ${this.maxRounds} rounds`, -32603, 200)
      result = await send({ inputResponses: await this.answerAll(result.inputRequests ?? {}), requestState: result.requestState })
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
  async answerAll(requests: Record<string, InputRequest>): Promise<Json> {
    const entries = await Promise.all(Object.entries(requests).map(async ([key, req]) => [key, await this.answer(req)] as const))
    return Object.fromEntries(entries)
  }

  /** Answer one server-to-client request through its handler; `McpHttpError` -32601 when there is none. */
  async answer(request: InputRequest): Promise<Json> {
    const h = this.handlers
    const params = request.params ?? {}
    if (request.method === 'elicitation/create' && h.elicit !== undefined) return h.elicit(params)
    if (request.method === 'sampling/createMessage' && h.sample !== undefined) return h.sample(params)
    if (request.method === 'roots/list' && h.listRoots !== undefined) return { roots: await h.listRoots() }
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
  async pollNotifications(onNotification?: PollOptions['onNotification']): Promise<boolean> {
    const res = await this.get('/notifications')
    const group = res.headers.get('mcp-message-group')
    if (group === null) return false
    for (const n of res.body as Json[]) await onNotification?.(n)
    await this.send('POST', '/notifications', { headers: { 'mcp-message-group': group } })
    return true
  }

  /** One `POST /requests`: answer the request handed out, if any. True when there was one. */
  async pollRequests(): Promise<boolean> {
    const res = await this.send('POST', '/requests')
    if (res.status === 204) return false
    const id = res.headers.get('mcp-request-id') as string
    let answer = this.answered.get(id)
    if (answer === undefined) {
      try {
        answer = await this.answer(res.body as InputRequest)
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
