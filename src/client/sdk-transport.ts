import { PureHttpClient, TASKS_EXTENSION } from './client.js'
import { McpHttpError, reasonText, sleep, type HandlerContext, type Json } from './types.js'
import { LEGACY_VERSIONS, plain, route, sdkCapabilities, type JsonRpcMessage, type PureHttpTransportOptions } from './sdk-routes.js'

export type { JsonRpcMessage, PureHttpTransportOptions } from './sdk-routes.js'

/**
 * A `Transport` of the official MCP SDK (`@modelcontextprotocol/sdk`) over the Pure HTTP binding:
 * the SDK's JSON-RPC requests become Pure HTTP routes, answered through `onmessage`; server
 * notifications (`GET /notifications`) and questions (MRTR `inputRequests`, task `input_required`,
 * `POST /requests`) reach the SDK as JSON-RPC notifications and requests, and its responses go back.
 * `notifications/cancelled` from the SDK cancels the call on the server (or the task).
 *
 * @example
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js'
 * const client = new Client({ name: 'app', version: '1.0.0' }, { capabilities: { elicitation: {} } })
 * await client.connect(new PureHttpTransport({ url: 'http://127.0.0.1:3000' }))
 * await client.callTool({ name: 'echo', arguments: { text: 'hi' } })
 */
export class PureHttpTransport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JsonRpcMessage) => void
  /** The `Mcp-Session-Id` the server issued, if any. */
  sessionId?: string
  /** The Pure HTTP client underneath, for what the SDK has no method for. */
  readonly client: PureHttpClient
  private readonly version: string | undefined
  private readonly intervalMs: number
  private readonly inflight = new Map<string | number, AbortController>()
  private readonly asked = new Map<string, { resolve: (result: Json) => void; reject: (error: unknown) => void }>()
  private readonly stop = new AbortController()
  private loops: Promise<void>[] = []
  private asks = 0

  constructor(options: PureHttpTransportOptions) {
    this.version = options.protocolVersion
    this.intervalMs = options.pollIntervalMs ?? 1000
    this.client = new PureHttpClient({
      ...options,
      protocolVersion: options.protocolVersion ?? '2025-11-25',
      handlers: {
        elicit: (params, context) => this.ask('elicitation/create', params, context),
        sample: (params, context) => this.ask('sampling/createMessage', params, context),
        listRoots: async (context) => (await this.ask('roots/list', {}, context)).roots
      }
    })
  }

  async start(): Promise<void> {}

  /** A request is answered later through `onmessage`; a notification or a response is sent before this resolves. */
  async send(message: JsonRpcMessage): Promise<void> {
    if (message.method === undefined) return this.answered(message)
    if (message.id === undefined) return this.notified(message.method, message.params)
    void this.request(message.id, message.method, message.params ?? {})
  }

  /** Stops polling, aborts what is in flight (cancelling it on the server), then `onclose`. */
  async close(): Promise<void> {
    if (this.stop.signal.aborted) return
    const reason = new Error('The transport was closed')
    this.stop.abort(reason)
    // Questions asked of the SDK end with these signals (the poller's, or their call's).
    for (const controller of this.inflight.values()) controller.abort(reason)
    await Promise.all(this.loops)
    this.onclose?.()
  }

  private deliver(message: JsonRpcMessage): void {
    this.onmessage?.(message)
  }

  // ---- the SDK's requests ----

  private async request(id: string | number, method: string, params: Json): Promise<void> {
    const controller = new AbortController()
    this.inflight.set(id, controller)
    try {
      const result = method === 'initialize' ? await this.initialize(params, controller.signal) : await route(this.client, method, params, controller.signal)
      this.deliver({ jsonrpc: '2.0', id, result })
    } catch (err) {
      // Cancelled by the SDK (it answers its caller itself) or closed: nothing to deliver.
      if (controller.signal.aborted) return
      const e = err as Partial<McpHttpError> & Error
      const error: Json = { code: typeof e.code === 'number' ? e.code : -32603, message: e.message }
      if (e.data !== undefined) error.data = e.data
      this.deliver({ jsonrpc: '2.0', id, error })
    } finally {
      this.inflight.delete(id)
    }
  }

  /** Legacy era: `POST /initialize` with the SDK's capabilities. Modern: `GET /discover`, answered as an InitializeResult. */
  private async initialize(params: Json, signal: AbortSignal): Promise<Json> {
    const c = this.client
    c.info = params.clientInfo
    const capabilities: Json = params.capabilities ?? {}
    // Tasks the SDK did not ask for are waited for here, so declaring the extension costs it nothing.
    c.clientCapabilities = { ...capabilities, extensions: { ...capabilities.extensions, [TASKS_EXTENSION]: {} } }
    let result: Json
    if (this.version === undefined || this.version.startsWith('2025-')) {
      c.protocolVersion = this.version ?? (LEGACY_VERSIONS.includes(params.protocolVersion) ? params.protocolVersion : '2025-11-25')
      result = await c.initialize({ signal })
      this.sessionId = c.sessionId
      result = { ...result, capabilities: sdkCapabilities(result.capabilities) }
    } else {
      const discovered = await c.discover({ signal })
      const { capabilities: serverCapabilities, serverInfo, instructions } = discovered
      result = { protocolVersion: params.protocolVersion, capabilities: sdkCapabilities(serverCapabilities), serverInfo, instructions }
    }
    this.loops = [this.loop(() => c.pollNotifications((n) => this.deliver({ jsonrpc: '2.0', ...n }), { signal: this.stop.signal }))]
    // In 2026-07-28 the server asks inside the calls' answers; /requests serves the legacy era.
    if (c.legacy) this.loops.push(this.loop(() => c.pollRequests({ signal: this.stop.signal })))
    return plain(result)
  }

  /** Poll until closed; an error goes to `onerror` and the loop goes on after a pause. */
  private async loop(step: () => Promise<boolean>): Promise<void> {
    const signal = this.stop.signal
    while (!signal.aborted) {
      let busy = false
      try {
        busy = await step()
      } catch (err) {
        if (!signal.aborted) this.onerror?.(err as Error)
      }
      if (!busy) await sleep(this.intervalMs, signal)
    }
  }

  // ---- the SDK's notifications and responses ----

  private async notified(method: string, params: Json | undefined): Promise<void> {
    if (method === 'notifications/cancelled') {
      this.inflight.get(params?.requestId)?.abort(new Error(params?.reason ?? 'Cancelled by the client'))
      return
    }
    // 2026-07-28 has no handshake to confirm.
    if (method === 'notifications/initialized' && !this.client.legacy) return
    await this.client.notify([{ method, params }])
  }

  private async answered(message: JsonRpcMessage): Promise<void> {
    const pending = this.asked.get(String(message.id))
    if (pending === undefined) return
    this.asked.delete(String(message.id))
    if (message.error !== undefined) pending.reject(new McpHttpError(message.error.message, message.error.code, 0, message.error.data))
    else pending.resolve(message.result as Json)
  }

  // ---- the server's questions, asked of the SDK ----

  private ask(method: string, params: Json, context: HandlerContext): Promise<Json> {
    const id = `pure-http-${++this.asks}`
    const { signal } = context
    return new Promise((resolve, reject) => {
      const abandon = () => {
        this.asked.delete(id)
        // Tell the SDK, so that its handler (a form, say) can stop.
        this.deliver({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: reasonText(signal!.reason) } })
        reject(signal!.reason)
      }
      signal?.addEventListener('abort', abandon, { once: true })
      const settle = () => signal?.removeEventListener('abort', abandon)
      this.asked.set(id, {
        resolve: (result) => ((settle(), resolve(result))),
        reject: (error) => ((settle(), reject(error)))
      })
      this.deliver({ jsonrpc: '2.0', id, method, params })
    })
  }
}
