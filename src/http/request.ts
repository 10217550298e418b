import type { FastifyReply, FastifyRequest } from 'fastify'
import { CallContext, type CallInit, type Outlet } from '../core/call-context.js'
import { errors } from '../errors.js'
import { Header, decodeJsonHeader, isPlainObject } from '../headers.js'
import { MetaKey, era as eraOf, isSupportedVersion, SUPPORTED_VERSIONS, type Era, type ProtocolVersion } from '../protocol.js'
import type { Meta } from '../schema/common.js'
import type { InputResponses } from '../schema/mrtr.js'
import { wantsStream } from './sse-result.js'
import { copyOf } from '../core/results.js'

/** Parameters of a request that may be a retry (tools/call, prompts/get, resources/read). */
export interface RetryParams {
  _meta?: Meta
  inputResponses?: InputResponses
  requestState?: string
}

// The _meta objects a POST decoded from Mcp-Meta, so createContext can tell them from a body's. A GET
// has no body to tell them from, and a WeakSet entry costs every GET that sends Mcp-Meta (a task
// poll) an ephemeron write barrier.
const FROM_HEADER = new WeakSet<object>()

/** The `_meta`, input responses and state of a GET, from the `Mcp-*` headers. */
export function paramsFromHeaders(request: FastifyRequest): RetryParams {
  const h = request.headers
  const params: RetryParams = {}
  const meta = decodeJsonHeader(Header.meta, h[Header.meta], 'object') as Meta | undefined
  if (meta !== undefined) {
    if (request.method === 'POST') FROM_HEADER.add(meta)
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

/**
 * The parameters of a POST that may be a retry: the body, plus `Mcp-Meta`, `Mcp-Input-Responses` and
 * `Mcp-Request-State` headers when sent (never ignored; 400 when the body carries the same one).
 */
export function paramsFromPost<B extends RetryParams>(request: FastifyRequest, body: B): B {
  const h = request.headers
  if (h[Header.meta] === undefined && h[Header.inputResponses] === undefined && h[Header.requestState] === undefined) return body
  const fromHeaders = paramsFromHeaders(request)
  const merged: B = copyOf(body)
  for (const [key, header] of [['_meta', 'Mcp-Meta'], ['inputResponses', 'Mcp-Input-Responses'], ['requestState', 'Mcp-Request-State']] as const) {
    if (fromHeaders[key] === undefined) continue
    if (body[key] !== undefined) throw errors.invalidParams(`Send ${key} in the body or in the ${header} header, not both`)
    ;(merged as RetryParams)[key] = fromHeaders[key] as never
  }
  return merged
}

/**
 * Let `notifications/cancelled` naming this call abort it, until its response ends.
 */
export function cancellable(ctx: CallContext, reply: FastifyReply): CallContext {
  const release = reply.server.mcp.cancellations.track(ctx.principal.id, ctx.requestId, ctx)
  reply.raw.once('close', release)
  return ctx
}

/**
 * {@link cancellable} for a Pure HTTP route, when the client can name this request: it sent its
 * `Mcp-Request-Id`, or reads the answer as a stream, whose headers carry the generated id before the
 * end. Any other client learns the id with the answer, too late to cancel anything.
 */
export function cancellableByClient(ctx: CallContext, reply: FastifyReply): CallContext {
  const request = reply.request
  return request.headers[Header.requestId] !== undefined || wantsStream(request) ? cancellable(ctx, reply) : ctx
}

/**
 * Build the core's request context (the retry fields stay in `params`, for the core to check). In 2026-07-28 the `_meta` envelope may name the version and
 * carries the client's capabilities; a version there that contradicts the header is 400 -32020.
 * In the legacy era the capabilities are those its `initialize` declared for the connection.
 */
export async function createContext(request: FastifyRequest, reply: FastifyReply, params?: RetryParams, outlet?: Outlet): Promise<CallContext> {
  return contextOf(request, reply, params, outlet)
}

/**
 * {@link createContext} without a promise where none is needed: the context itself in 2026-07-28,
 * a promise only in the legacy era (which reads the connection's capabilities from the store).
 */
export function contextOf(
  request: FastifyRequest,
  reply: FastifyReply,
  params: RetryParams = {},
  outlet: Outlet = request.server.mcp.queue
): CallContext | Promise<CallContext> {
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
    return request.server.mcp
      .legacyCapabilities(state.principal.id)
      .then((caps) => newContext(request, reply, version, legacy, meta, caps, outlet))
  }
  const declared = meta?.[MetaKey.clientCapabilities]
  if (declared !== undefined && !isPlainObject(declared)) {
    throw errors.invalidParams(`_meta["${MetaKey.clientCapabilities}"] must be an object`)
  }
  return newContext(request, reply, version, era, meta, declared, outlet)
}

function newContext(
  request: FastifyRequest,
  reply: FastifyReply,
  protocolVersion: ProtocolVersion,
  era: Era,
  meta: Meta | undefined,
  clientCapabilities: Record<string, unknown> | undefined,
  outlet: Outlet
): CallContext {
  const state = request.mcpState
  const res = reply.raw
  const init: CallInit = {
    requestId: state.requestId,
    protocolVersion,
    era,
    meta,
    clientCapabilities,
    principal: state.principal,
    log: request.log,
    deadline: Date.now() + request.server.mcp.maxRequestMs,
    // The signal aborts when the client goes away before the answer is written.
    watch: (abort) => {
      const gone = () => abort(new Error('The client closed the connection'))
      // Gone before we looked: a race between the client and this request that no test provokes.
      /* c8 ignore next */
      if (res.destroyed && !res.writableFinished) gone()
      else res.once('close', () => res.writableFinished || gone())
    }
  }
  return new CallContext(init, outlet)
}
