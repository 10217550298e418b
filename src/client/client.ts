import { encodeJsonHeader } from '../headers.js'
import { AnsweringClient } from './answering.js'
import { awaitTask, resumed, rounds } from './flows.js'
export { isTask } from './flows.js'
import type * as R from './results.js'
import type { CallOptions, CallToolOptions, Json, PureHttpClientOptions } from './types.js'
import { deleteWebhook, listWebhooks, registerWebhook, type RegisteredWebhook } from './webhooks.js'

export * from './types.js'
export type * from './results.js'
export { TASKS_EXTENSION, type Reply, type RequestOptions } from './exchange.js'
export { DpopProver, dpopKeyFromJwk, generateDpopKey, type DpopKey } from './dpop.js'

/** The lists, by their path: the key of the items in a page. */
const LISTS = { '/tools': 'tools', '/prompts': 'prompts', '/resources': 'resources', '/resources/templates': 'resourceTemplates' } as const
export type ListPath = keyof typeof LISTS
type ListItem<P extends ListPath> = R.ListItems[P]

/**
 * A client of the Pure HTTP binding (SEP-1612) on `fetch`. Every MCP flow is one call: lists follow
 * cursors and revalidate with ETags, calls run the multi round-trip loop through the handlers, follow
 * resume tokens and wait for tasks. Every call takes `{ signal }` (see {@link CallOptions}). Results
 * are typed by the server's schemas (`CallToolResult`, `Tool`, ...).
 *
 * @example
 * import { PureHttpClient } from 'mcp-pure-http/client'
 * const client = new PureHttpClient({ url: 'http://127.0.0.1:3000' })
 * const tools = await client.listTools()
 * const result = await client.callTool('echo', { text: 'hi' })
 */
export class PureHttpClient extends AnsweringClient {
  private readonly maxRounds: number
  private readonly cache = new Map<string, { etag: string; body: Json }>()

  constructor(options: PureHttpClientOptions) {
    super(options)
    this.maxRounds = options.maxRounds ?? 10
  }

  // ---- lifecycle ----

  /** `initialize` (legacy era): declares the capabilities for the logical connection; adopts the answered version and any `Mcp-Session-Id`. */
  async initialize(options: CallOptions = {}): Promise<R.InitializeResult> {
    const res = await this.send('POST', '/initialize', {
      body: { protocolVersion: this.protocolVersion, capabilities: this.clientCapabilities, clientInfo: this.info },
      signal: options.signal
    })
    this.protocolVersion = res.body.protocolVersion
    this.sessionId = res.headers.get('mcp-session-id') ?? this.sessionId
    return res.body
  }

  /** `server/discover`. */
  async discover(options: CallOptions = {}): Promise<R.DiscoverResult> {
    return (await this.get('/discover', options)).body
  }

  /** `ping` (legacy era); 2026-07-28 has none, and any request does: there it is `GET /discover`, which a cache answers cheaply. */
  async ping(options: CallOptions = {}): Promise<void> {
    await this.get(this.legacy ? '/ping' : '/discover', options)
  }

  /**
   * The level of the log messages this client wants: `POST /logLevel` for the connection (legacy
   * era); in 2026-07-28, which removed `logging/setLevel`, the `_meta` level of every later request.
   */
  async setLogLevel(level: string, options: CallOptions = {}): Promise<void> {
    if (this.legacy) await this.post('/logLevel', { level }, options)
    this.logLevel = level
  }

  /** Client notifications (`notifications/roots/list_changed`, ...) in the body of `POST /notifications`. */
  async notify(notifications: Json[], options: CallOptions = {}): Promise<void> {
    await this.send('POST', '/notifications', { body: notifications, signal: options.signal })
  }

  // ---- lists ----

  /** One page of a list, from the ETag cache when the server answers 304. */
  async page<P extends ListPath>(path: P, cursor?: string, options: CallOptions = {}): Promise<R.ListPages[P]> {
    const url = cursor === undefined ? path : `${path}?cursor=${encodeURIComponent(cursor)}`
    const known = this.cache.get(url)
    const res = await this.get(url, { ...options, headers: known === undefined ? {} : { 'if-none-match': known.etag } })
    if (res.status === 304) return known!.body as R.ListPages[P]
    const etag = res.headers.get('etag')
    if (etag !== null) this.cache.set(url, { etag, body: res.body })
    return res.body
  }

  private async list<P extends ListPath>(path: P, options: CallOptions): Promise<ListItem<P>[]> {
    const items: ListItem<P>[] = []
    let cursor: string | undefined
    do {
      const page: Json = await this.page(path, cursor, options)
      items.push(...(page[LISTS[path]] as ListItem<P>[]))
      cursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined
    } while (cursor !== undefined)
    return items
  }

  /** Every tool, across pages; unchanged pages come from the ETag cache (304). */
  listTools(options: CallOptions = {}): Promise<R.Tool[]> {
    return this.list('/tools', options)
  }

  listPrompts(options: CallOptions = {}): Promise<R.Prompt[]> {
    return this.list('/prompts', options)
  }

  listResources(options: CallOptions = {}): Promise<R.Resource[]> {
    return this.list('/resources', options)
  }

  listResourceTemplates(options: CallOptions = {}): Promise<R.ResourceTemplate[]> {
    return this.list('/resources/templates', options)
  }

  // ---- operations ----

  /**
   * `tools/call`, whole: `input_required` rounds answered by the handlers, resume tokens followed
   * (the parts' `content` concatenated, the rest from the last part), and a task (202) polled to its
   * result. A failed or cancelled task throws `McpHttpError`; a tool error is a result with `isError`.
   * With `wait: false`, a call that becomes a task answers its `CreateTaskResult` instead.
   */
  callTool(name: string, args?: Json, options?: CallToolOptions & { wait?: true }): Promise<R.CallToolResult>
  callTool(name: string, args: Json, options: CallToolOptions): Promise<R.CallToolResult | R.CreateTaskResult>
  callTool(name: string, args: Json = {}, options: CallToolOptions = {}): Promise<R.CallToolResult | R.CreateTaskResult> {
    const path = `/tools/${encodeURIComponent(name)}/calls`
    const { signal } = options
    const body: Json = { arguments: args }
    if (options.task !== undefined) body.task = options.task
    return resumed('content', (resume) =>
      rounds<R.CallToolResult | R.CreateTaskResult>(this.maxRounds, this.answerAllBound, signal, async (retry) => {
        const res = await this.post(path, { ...body, ...retry }, { signal, meta: { ...options.meta, ...resume }, cancellable: true })
        if (res.status !== 202) return res.body
        return options.wait === false ? res.body : awaitTask(this, this.answerAllBound, res.body, res.headers, options)
      })
    )
  }

  /** `prompts/get` (GET with `Mcp-Arguments`; MRTR retries go by POST with a body). */
  getPrompt(name: string, args?: Record<string, string>, options: CallOptions = {}): Promise<R.GetPromptResult> {
    return rounds(this.maxRounds, this.answerAllBound, options.signal, (retry) => this.read(`/prompts/${encodeURIComponent(name)}`, retry, options, args))
  }

  /** `resources/read`, whole: MRTR rounds, and resume tokens followed (the parts' `contents` concatenated). */
  readResource(uri: string, options: CallOptions = {}): Promise<R.ReadResourceResult> {
    const path = `/resources/${encodeURIComponent(uri)}`
    return resumed('contents', (resume) =>
      rounds(this.maxRounds, this.answerAllBound, options.signal, (retry) => this.read(path, retry, { ...options, meta: { ...options.meta, ...resume } }))
    )
  }

  private async read(path: string, retry: Json, options: CallOptions, args?: Json): Promise<any> {
    if (retry.requestState !== undefined || retry.inputResponses !== undefined) {
      return (await this.post(path, { arguments: args, ...retry }, { ...options, cancellable: true })).body
    }
    const headers: Record<string, string> = args === undefined ? {} : { 'mcp-arguments': encodeJsonHeader(args) }
    return (await this.get(path, { ...options, headers, cancellable: true })).body
  }

  /** `completion/complete`. */
  async complete(ref: Json, argument: { name: string; value: string }, context?: Json, options: CallOptions = {}): Promise<R.CompleteResult> {
    return (await this.post('/completions', { ref, argument, context }, options)).body
  }

  /**
   * `subscriptions/listen` (2026-07-28, which removed `resources/subscribe`): `POST /subscriptions/listen`,
   * then every notification of its stream to `onNotification`, the acknowledgement first (it names
   * the URIs the server honoured). Resolves when `signal` aborts (which ends the subscription) or the
   * server ends the stream.
   * @example
   * const stop = new AbortController()
   * await client.listen({ toolsListChanged: true, resourceSubscriptions: ['demo://items/2'] }, {
   *   signal: stop.signal,
   *   onNotification: (n) => console.log(n.method, n.params)
   * })
   */
  async listen(notifications: ListenNotifications, options: ListenOptions): Promise<void> {
    const { signal } = options
    const reply = await this.send('POST', '/subscriptions/listen', { body: { notifications }, stream: true, ...(signal === undefined ? {} : { signal }) })
    if (reply.events === undefined) return
    try {
      for await (const { event, data } of serverSentEvents(reply.events)) {
        if (event !== 'notification') return // the listen request's result: the server ended it
        const { method, params } = JSON.parse(data) as { method: string; params?: Json }
        options.onNotification(params === undefined ? { method } : { method, params })
      }
    } catch (err) {
      if (signal?.aborted !== true) throw err
    }
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
}

/** What `listen` asks for: list changes, and updates of resources by URI. */
export interface ListenNotifications {
  toolsListChanged?: boolean
  promptsListChanged?: boolean
  resourcesListChanged?: boolean
  resourceSubscriptions?: string[]
}

export interface ListenOptions {
  /** Each notification of the stream, as `{ method, params }`. */
  onNotification: (notification: { method: string; params?: Json }) => void
  /** Ends the stream, and with it the subscription. */
  signal?: AbortSignal
}

/** The events of a Server-Sent Events body (comments skipped; several `data:` lines joined by newlines). */
async function * serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  let buffer = ''
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
    buffer += chunk.replace(/\r\n?/g, '\n')
    let end
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = 'message'
      const data: string[] = []
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim()
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      }
      if (data.length > 0) yield { event, data: data.join('\n') }
    }
  }
}
