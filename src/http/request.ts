import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Principal } from '../core/context.js'
import type { RequestContext } from '../core/context.js'
import type { McpServer } from '../core/mcp-server.js'
import { errors } from '../errors.js'
import { Header, decodeJsonHeader, isPlainObject } from '../headers.js'
import { MetaKey, era as eraOf, isSupportedVersion, SUPPORTED_VERSIONS, type Era, type ProtocolVersion } from '../protocol.js'
import type { Meta } from '../schema/common.js'
import type { InputResponses } from '../schema/mrtr.js'
import type { Store } from '../store/types.js'
import type { LoggingLevel } from '../schema/lifecycle.js'
import { sendLog, sendProgress } from '../messaging/notify.js'
import { wantsStream } from './stream.js'

/** What the MCP hooks learn about a request before its route runs. */
export interface McpRequestState {
  requestId: string
  version: ProtocolVersion
  era: Era
  /** True when the version came from the header (else the server default). */
  versionFromHeader: boolean
  principal: Principal
}

declare module 'fastify' {
  interface FastifyRequest {
    mcpState: McpRequestState
  }
  interface FastifyInstance {
    mcp: McpServer
    mcpStore: Store
    /** In-flight requests that run handlers, by `owner\0requestId`, for notifications/cancelled. */
    mcpInflight: Map<string, Abortable>
    /** Where the MCP routes are mounted ('' at the root), for links such as Location. */
    mcpPrefix: string
    /** Whether /initialize issues Mcp-Session-Id (no authentication, `sessions: true`). */
    mcpSessions: boolean
  }
}

/** Parameters of a request that may be a retry (tools/call, prompts/get, resources/read). */
export interface RetryParams {
  _meta?: Meta
  inputResponses?: InputResponses
  requestState?: string
}

// The _meta objects decoded from Mcp-Meta, so createContext can tell them from a body's.
const FROM_HEADER = new WeakSet<object>()

/** The `_meta`, input responses and state of a GET, from the `Mcp-*` headers. */
export function paramsFromHeaders(request: FastifyRequest): RetryParams {
  const h = request.headers
  const params: RetryParams = {}
  const meta = decodeJsonHeader(Header.meta, h[Header.meta], 'object') as Meta | undefined
  if (meta !== undefined) {
    FROM_HEADER.add(meta)
    params._meta = meta
  }
  const responses = decodeJsonHeader(Header.inputResponses, h[Header.inputResponses], 'object') as InputResponses | undefined
  if (responses !== undefined) {
    for (const [k, v] of Object.entries(responses)) {
      if (!isPlainObject(v)) throw errors.invalidParams(`Invalid Mcp-Input-Responses header: "${k}" must be an object`)
    }
    params.inputResponses = responses
  }
  const state = h[Header.requestState]
  if (state !== undefined) {
    if (Array.isArray(state) || state === '' || state.length > 65536) throw errors.invalidParams('Invalid Mcp-Request-State header')
    // The opaque token itself; a JSON string form ("...") is accepted too.
    params.requestState = state.startsWith('"') ? (decodeJsonHeader(Header.requestState, state, 'string') as string) : state
  }
  return params
}

/** What notifications/cancelled aborts: a running request. */
export interface Abortable {
  abort(reason: Error): void
}

const kController = Symbol('mcp.abortController')
const kGetController = Symbol('mcp.getAbortController')

/**
 * The parameters of a POST that may be a retry: the body, plus `Mcp-Meta`, `Mcp-Input-Responses` and
 * `Mcp-Request-State` headers when sent (never ignored; 400 when the body carries the same one).
 */
export function paramsFromPost<B extends RetryParams>(request: FastifyRequest, body: B): B {
  const h = request.headers
  if (h[Header.meta] === undefined && h[Header.inputResponses] === undefined && h[Header.requestState] === undefined) return body
  const fromHeaders = paramsFromHeaders(request)
  const merged: B = { ...body }
  for (const [key, header] of [['_meta', 'Mcp-Meta'], ['inputResponses', 'Mcp-Input-Responses'], ['requestState', 'Mcp-Request-State']] as const) {
    if (fromHeaders[key] === undefined) continue
    if (body[key] !== undefined) throw errors.invalidParams(`Send ${key} in the body or in the ${header} header, not both`)
    ;(merged as RetryParams)[key] = fromHeaders[key] as never
  }
  return merged
}

class HttpRequestContext implements RequestContext, Abortable {
  // No #private members here: a derived context (see derive()) calls these methods through a Proxy,
  // and private members are not reachable through it.
  [kController]: AbortController | undefined
  constructor(
    readonly requestId: string,
    readonly protocolVersion: ProtocolVersion,
    readonly era: Era,
    readonly meta: Meta | undefined,
    readonly clientCapabilities: Readonly<Record<string, unknown>> | undefined,
    readonly principal: Principal,
    readonly log: FastifyRequest['log'],
    readonly reply: FastifyReply,
    readonly store: Store,
    readonly deadline: number
  ) {}

  // Created on first use (an AbortController and its close listener are not free, and most handlers
  // never look), or by a cancellation that arrives first.
  get signal(): AbortSignal {
    return this[kGetController]().signal
  }

  progress(progress: number, total?: number, message?: string): Promise<void> {
    return sendProgress(this.store, this, progress, total, message)
  }

  sendLog(level: LoggingLevel, data: unknown, logger?: string): Promise<void> {
    return sendLog(this.store, this, level, data, logger)
  }

  /** Register this request so that `notifications/cancelled` naming its id aborts it, until it ends. */
  cancellable(inflight: Map<string, Abortable>): this {
    const key = `${this.principal.id}\0${this.requestId}`
    inflight.set(key, this)
    this.reply.raw.once('close', () => inflight.delete(key))
    return this
  }

  /**
   * {@link cancellable} for a Pure HTTP route, when the client can name this request: it sent its
   * `Mcp-Request-Id`, or reads the answer as a stream, whose headers carry the generated id before the
   * end. Any other client learns the id with the answer, too late to cancel anything.
   */
  cancellableByClient(inflight: Map<string, Abortable>): this {
    const request = this.reply.request
    return request.headers[Header.requestId] !== undefined || wantsStream(request) ? this.cancellable(inflight) : this
  }

  /** Abort the request (notifications/cancelled); a signal read later is already aborted. */
  abort(reason: Error): void {
    this[kGetController]().abort(reason)
  }

  [kGetController](): AbortController {
    if (this[kController] === undefined) {
      const controller = (this[kController] = new AbortController())
      const res = this.reply.raw
      const abort = () => controller.abort(new Error('The client closed the connection'))
      // Gone before we looked: a race between the client and this request that no test provokes.
      /* c8 ignore next */
      if (res.destroyed && !res.writableFinished) abort()
      else res.once('close', () => res.writableFinished || abort())
    }
    return this[kController]
  }
}

/**
 * Build the core's request context (the retry fields stay in `params`, for the core to check). In 2026-07-28 the `_meta` envelope may name the version and
 * carries the client's capabilities; a version there that contradicts the header is 400 -32020.
 * In the legacy era the capabilities are those its `initialize` declared for the connection.
 */
export async function createContext(request: FastifyRequest, reply: FastifyReply, params?: RetryParams): Promise<HttpRequestContext> {
  return contextOf(request, reply, params)
}

/**
 * {@link createContext} without a promise where none is needed: the context itself in 2026-07-28,
 * a promise only in the legacy era (which reads the connection's capabilities from the store).
 */
export function contextOf(
  request: FastifyRequest,
  reply: FastifyReply,
  params: RetryParams = {}
): HttpRequestContext | Promise<HttpRequestContext> {
  const state = request.mcpState
  let meta = params._meta
  if (request.method === 'POST' && request.headers[Header.meta] !== undefined && (meta === undefined || !FROM_HEADER.has(meta))) {
    // POST carries _meta in the body; the header is accepted too, but never both, never ignored.
    const fromHeader = decodeJsonHeader(Header.meta, request.headers[Header.meta], 'object') as Meta
    if (meta !== undefined) throw errors.invalidParams('Send _meta in the body or in the Mcp-Meta header, not both')
    meta = fromHeader
  }
  let { version, era } = state
  const metaVersion = meta?.[MetaKey.protocolVersion]
  if (metaVersion !== undefined) {
    if (typeof metaVersion !== 'string') throw errors.invalidParams(`_meta["${MetaKey.protocolVersion}"] must be a string`)
    if (state.versionFromHeader && metaVersion !== version) {
      throw errors.headerMismatch(`Mcp-Protocol-Version header (${version}) does not match _meta protocol version (${metaVersion})`)
    }
    if (!state.versionFromHeader) {
      if (!isSupportedVersion(metaVersion)) throw errors.unsupportedVersion(metaVersion.slice(0, 64), SUPPORTED_VERSIONS)
      version = metaVersion
      era = eraOf(version)
      state.version = version
      state.era = era
      reply.header(Header.protocolVersion, version)
    }
  }
  if (era !== 'modern') {
    const legacy = era
    return request.server.mcpStore
      .getLegacyClient(state.principal.id)
      .then((client) => newContext(request, reply, version, legacy, meta, client?.capabilities))
  }
  const declared = meta?.[MetaKey.clientCapabilities]
  if (declared !== undefined && !isPlainObject(declared)) {
    throw errors.invalidParams(`_meta["${MetaKey.clientCapabilities}"] must be an object`)
  }
  return newContext(request, reply, version, era, meta, declared)
}

function newContext(
  request: FastifyRequest,
  reply: FastifyReply,
  version: ProtocolVersion,
  era: Era,
  meta: Meta | undefined,
  caps: Record<string, unknown> | undefined
): HttpRequestContext {
  const state = request.mcpState
  return new HttpRequestContext(
    state.requestId,
    version,
    era,
    meta,
    caps,
    state.principal,
    request.log,
    reply,
    request.server.mcp.store,
    Date.now() + request.server.mcp.maxRequestMs
  )
}
