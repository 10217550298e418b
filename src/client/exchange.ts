import { randomUUID } from 'node:crypto'
import { encodeJsonHeader } from '../headers.js'
import { DpopProver } from './dpop.js'
import { McpHttpError, reasonText, sleep, type CallOptions, type ClientHandlers, type Json, type PureHttpClientOptions } from './types.js'

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'
const META_VERSION = 'io.modelcontextprotocol/protocolVersion'
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'

/** One HTTP answer: the body is parsed JSON (`undefined` when empty), typed by the method that asked. */
export interface Reply {
  status: number
  headers: Headers
  body: any
  /** With `stream`, an event-stream answer's body, unread. */
  events?: ReadableStream<Uint8Array>
}

export interface RequestOptions {
  body?: unknown
  headers?: Record<string, string>
  requestId?: string
  signal?: AbortSignal
  /** The request runs handlers: aborted in flight, it is cancelled on the server with notifications/cancelled. */
  cancellable?: boolean
  /** Overrides the client's `retry.attempts`. */
  attempts?: number
  /** A 200 `text/event-stream` answer is handed back unread, as `events`. */
  stream?: boolean
}

/** What `get` takes besides `CallOptions`. */
export interface GetOptions extends CallOptions {
  headers?: Record<string, string>
  cancellable?: boolean
}

function parse(text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The HTTP layer of {@link PureHttpClient}: one exchange with retries, the headers every request
 * carries (version, request id, token, session) and the 2026-07-28 `_meta` envelope. The MCP flows
 * are built on it in client.ts, tasks.ts and poller.ts.
 */
export class HttpExchange {
  readonly url: string
  protocolVersion: string
  /** `Mcp-Session-Id` issued by `initialize`, sent on every later request. */
  sessionId: string | undefined
  /** The level `setLogLevel` chose; in 2026-07-28 it travels in each request's `_meta`. */
  logLevel: string | undefined
  protected readonly handlers: ClientHandlers
  private readonly token: string | undefined
  /** With a DPoP key and a token: proofs for every request, and the server's nonce. */
  private readonly dpop: DpopProver | undefined
  private capabilities: Json
  private clientInfo: { name: string; version: string }
  private readonly attempts: number
  private readonly baseMs: number

  constructor(options: PureHttpClientOptions) {
    this.url = String(options.url).replace(/\/+$/, '')
    this.token = options.token
    if (options.dpop !== undefined && options.token === undefined) throw new TypeError('PureHttpClient: dpop needs the token bound to its key')
    this.dpop = options.dpop === undefined ? undefined : new DpopProver(options.dpop)
    this.protocolVersion = options.protocolVersion ?? '2026-07-28'
    this.handlers = options.handlers ?? {}
    this.clientInfo = options.clientInfo ?? { name: 'mcp-pure-http-client', version: '0.1.0' }
    this.attempts = Math.max(1, options.retry?.attempts ?? 3)
    this.baseMs = options.retry?.baseMs ?? 200
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
    if (this.token !== undefined) headers.authorization = `${this.dpop === undefined ? 'Bearer' : 'DPoP'} ${this.token}`
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId
    const init: RequestInit = { method, headers, signal }
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json'
      init.body = JSON.stringify(options.body)
    }
    const attempts = options.attempts ?? this.attempts
    let res: Response | undefined
    let text = ''
    let nonceRetried = false
    for (let attempt = 1; res === undefined; attempt++) {
      let answer: Response
      try {
        // A proof is used once: every attempt gets its own.
        if (this.dpop !== undefined) headers.dpop = this.dpop.proof(method, this.url + path, this.token!)
        answer = await fetch(this.url + path, init)
        if (options.stream === true && answer.status === 200 && answer.headers.get('content-type')?.startsWith('text/event-stream') === true) {
          return { status: 200, headers: answer.headers, body: undefined, events: answer.body! }
        }
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
      // Once per request: a server that keeps asking for a nonce it refuses is answered with its 401.
      if (this.dpop?.heard(answer) === true && !nonceRetried) {
        nonceRetried = true
        attempt--
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

  /** Pause `ms`, then throw if `signal` aborted meanwhile. */
  async pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
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

  /** A GET with the request's `_meta` in `Mcp-Meta`. */
  get(path: string, options: GetOptions = {}): Promise<Reply> {
    const meta = this.meta(options.meta)
    const headers = meta === undefined ? options.headers : { ...options.headers, 'mcp-meta': encodeJsonHeader(meta) }
    return this.send('GET', path, { headers, signal: options.signal, cancellable: options.cancellable })
  }

  /** A POST of `body` with the request's `_meta` in it. */
  post(path: string, body: Json, options: CallOptions & { cancellable?: boolean } = {}): Promise<Reply> {
    return this.send('POST', path, { body: { ...body, _meta: this.meta(options.meta) }, signal: options.signal, cancellable: options.cancellable })
  }
}
