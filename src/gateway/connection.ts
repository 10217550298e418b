import { AsyncLocalStorage } from 'node:async_hooks'
import type { IncomingMessage, Server } from 'node:http'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { KeyLookup } from '../auth/api-keys.js'
import { DPOP_SCHEME } from '../auth/take-header.js'
import { errors } from '../errors.js'
import type { Logger } from '../core/request-context.js'
import type { ServerMessage } from '../store/types.js'
import { boundToUs } from './child.js'
import type { Sdk } from './sdk.js'
import { StdioChild } from './stdio.js'
import { exchanging, type Caller, type TokenExchangeSpec, type UpstreamFetch } from './token-exchange.js'

/** One MCP server behind the gateway: a command to run (stdio) or a Streamable HTTP (or HTTP+SSE) URL. */
export type UpstreamSpec =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | {
    url: string
    headers?: Record<string, string>
    /** Send the calling client's `Authorization` upstream in place of `headers`' (default false). */
    forwardAuthorization?: boolean
    /** The 2024-11-05 HTTP+SSE transport (an event stream by GET, messages by POST) in place of Streamable HTTP. */
    sse?: boolean
    /** Exchange the calling client's access token for the upstream's (RFC 8693); not with `forwardAuthorization`. */
    tokenExchange?: TokenExchangeSpec
  }

export interface Progress {
  progress: number
  total?: number
  message?: string
}

/** What a connection hears from the upstream, besides the answers to its requests. */
export interface Handlers {
  notified(message: ServerMessage): void
  /** A server-to-client request (elicitation, sampling, roots): resolve its result or throw. */
  asked(request: ServerMessage, signal: AbortSignal): Promise<Record<string, unknown>>
  progress(token: string, p: Progress): void
  /** A line a stdio child wrote on stderr (after it was logged). */
  stderr(line: string): void
}

/**
 * The calling client's `Authorization` while the gateway works for it, read by the fetch of an
 * upstream that forwards or exchanges it (see {@link watchCallers}); none in the gateway's own work.
 */
const caller = new AsyncLocalStorage<Caller>()

/**
 * Keep each HTTP request's `Authorization` for the work it starts. Set on the Node server before
 * Fastify's own listener runs (in the same synchronous emit), so that the whole request, and the
 * upstream request it makes, runs in its context; Fastify's hooks cannot wrap routes already
 * registered. A request without the header clears what a previous one on the connection set.
 * `keys`: the gateway's API keys, which a token exchange never sends.
 */
export function watchCallers(server: Server, keys?: KeyLookup): void {
  server.prependListener('request', (req: IncomingMessage) => caller.enterWith({ authorization: req.headers.authorization, keys }))
}

const NOTIFICATIONS = [
  'ToolListChangedNotificationSchema',
  'PromptListChangedNotificationSchema',
  'ResourceListChangedNotificationSchema',
  'ResourceUpdatedNotificationSchema',
  'LoggingMessageNotificationSchema'
] as const
const REQUESTS = ['ElicitRequestSchema', 'CreateMessageRequestSchema', 'ListRootsRequestSchema'] as const

/**
 * An SDK `Client` for `spec`, declaring the capabilities the gateway relays, with `handlers` for
 * what the upstream sends, and its transport (not connected yet). A stdio child's stderr goes to
 * `log`, a line each.
 */
export function newConnection(sdk: Sdk, spec: UpstreamSpec, name: string, log: Logger, handlers: Handlers): { client: Client; transport: Transport } {
  const client = new sdk.Client(
    { name: 'mcp-pure-http-gateway', version: '0.1.0' },
    { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} } }
  )
  for (const schema of NOTIFICATIONS) {
    client.setNotificationHandler(sdk.types[schema], (n: ServerMessage) => handlers.notified({ method: n.method, params: n.params! }))
  }
  // Progress by our own tokens: the SDK's onprogress drops a progress notification that arrives
  // just before its response (its handler runs a microtask late, after the response removed it).
  client.setNotificationHandler(sdk.types.ProgressNotificationSchema, (n: { params: Progress & { progressToken: unknown } }) =>
    handlers.progress(String(n.params.progressToken), n.params)
  )
  for (const schema of REQUESTS) {
    client.setRequestHandler(sdk.types[schema], (r: ServerMessage, extra: { signal: AbortSignal }) =>
      handlers.asked({ method: r.method, params: r.params! }, extra.signal) as never
    )
  }
  return { client, transport: transportOf(sdk, spec, name, log, handlers.stderr) }
}

function transportOf(sdk: Sdk, spec: UpstreamSpec, name: string, log: Logger, stderr: (line: string) => void): Transport {
  if ('url' in spec) {
    const options = { requestInit: { headers: spec.headers ?? {} }, fetch: fetchFor(spec, name, log) }
    if (spec.sse === true) return sseTransport(sdk, new URL(spec.url), options)
    return new sdk.StreamableHTTPClientTransport(new URL(spec.url), options)
  }
  const env = { ...sdk.getDefaultEnvironment(), ...spec.env }
  return new StdioChild({
    ...boundToUs(spec.command, spec.args ?? [], env, spec.cwd),
    env,
    cwd: spec.cwd,
    validate: (message) => sdk.types.JSONRPCMessageSchema.parse(message),
    stderr: (line) => {
      log.warn({ upstream: name, stderr: line }, 'upstream stderr')
      stderr(line)
    }
  })
}

/**
 * The 2024-11-05 transport. The SDK sends `requestInit`'s headers, and uses `fetch`, for both the
 * event stream and the POSTs. A lost stream is a lost session: left alone, its EventSource would
 * reconnect to a new session that was never initialized (a server answers each GET with a new
 * endpoint) and say nothing of it. So any error of the stream closes the transport, and the upstream
 * is connected again as after any lost connection. Closed a microtask later: EventSource arms its
 * reconnect timer after the error handler returns, and close() must find it to clear it.
 */
function sseTransport(sdk: Sdk, url: URL, options: ConstructorParameters<Sdk['SSEClientTransport']>[1]): Transport {
  const transport = new sdk.SSEClientTransport(url, options)
  transport.onerror = (err) => {
    if (err instanceof sdk.SseError) queueMicrotask(() => void transport.close())
  }
  return transport
}

/** The fetch of a URL upstream: as it is, forwarding the caller's `Authorization`, or exchanging its token. */
export function fetchFor(spec: Extract<UpstreamSpec, { url: string }>, name: string, log: Logger): UpstreamFetch {
  if (spec.tokenExchange !== undefined) return exchanging(spec.tokenExchange, name, log, () => caller.getStore())
  return spec.forwardAuthorization === true ? (url, init) => forwarding(url, init, name) : fetch
}

/**
 * Run `fn` as the gateway itself, outside any client's request: what it asks upstream then carries
 * the configured headers, never the credentials of the client whose request happened to bring the
 * news (a `list_changed` on the answer stream of that client's call).
 */
export function asGateway<T>(fn: () => T): T {
  return caller.exit(fn)
}

/** fetch, with the calling client's `Authorization` when there is one (never a DPoP-bound one: 403). */
export function forwarding(url: string | URL, init: RequestInit | undefined, upstream: string): Promise<Response> {
  const authorization = caller.getStore()?.authorization
  if (authorization === undefined) return fetch(url, init)
  // Without its proof a DPoP-bound token is refused upstream, and the proof names this gateway's
  // URL: say so rather than send what cannot work (RFC 9449).
  if (DPOP_SCHEME.test(authorization)) return Promise.reject(errors.tokenNotForwardable(upstream))
  // The SDK always passes its init (method, headers, body).
  const headers = new Headers(init!.headers)
  headers.set('authorization', authorization)
  return fetch(url, { ...init, headers })
}
