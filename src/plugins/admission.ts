import type { FastifyPluginAsync, FastifyReply, FastifyRequest, HookHandlerDoneFunction, preValidationHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { hostOriginPolicy, type HostOriginOptions } from '../auth/origin.js'
import { ANONYMOUS, type Principal } from '../core/request-context.js'
import type { McpServer } from '../core/mcp-server.js'
import { errors } from '../errors.js'
import { Header, REQUEST_ID, decodeJsonHeader, newRequestId } from '../headers.js'
import { LATEST_VERSION, MetaKey, era, isSupportedVersion, negotiateVersion, type Era, type ProtocolVersion } from '../protocol.js'
import { METHODS, REST_ROUTES } from '../methods.js'
import { authFailureLimit, type RateLimitOptions } from './rate-limit.js'
import { rootEchoes } from '../http/root-errors.js'
import mcpCors, { type CorsOptions } from './cors.js'

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
    /** Whether /initialize issues Mcp-Session-Id (no authentication, `sessions: true`). */
    mcpSessions: boolean
  }
  interface FastifyContextConfig {
    /** The route answers without authentication (the RFC 9728 metadata). */
    mcpPublic?: boolean
    /** A public, read-only document any page may read (the Server Card): no Origin check; the Host check stays. */
    mcpAnyOrigin?: boolean
    /** The JSON-RPC endpoint: it reads the protocol version from the message, not before it. */
    mcpJsonRpc?: boolean
  }
}

export interface AdmissionOptions extends HostOriginOptions {
  mcp: McpServer
  defaultVersion: ProtocolVersion
  /** Identify the caller; throw a 401/403 McpError to refuse. */
  authenticate: ((request: FastifyRequest, reply?: FastifyReply) => Promise<Principal>) | undefined
  sessions: boolean
  /** The per-principal limit; also bounds refused authentications per address (see authFailureLimit). */
  rateLimit?: RateLimitOptions
  /** CORS for the allowed origins (src/plugins/cors.ts); false: none. */
  cors: CorsOptions | false
}

/**
 * What every MCP request passes before its route: its `Mcp-Request-Id` (validated, echoed, else
 * generated), its protocol version (400 -32022 when unsupported), Host and Origin (DNS rebinding),
 * then CORS (a preflight is answered there), then who is calling (bearer token or API key, `authenticate`, or an
 * `Mcp-Session-Id`). One onRequest hook for the first three, so that a request pays for one hook call.
 */
const admission: FastifyPluginAsync<AdmissionOptions> = async (fastify, opts) => {
  const { defaultVersion, mcp } = opts
  fastify.decorateRequest('mcpState', null as never)
  const policy = hostOriginPolicy(opts, fastify.server)
  const hostOrigin = policy.check
  const admit: (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void = hostOrigin ?? ((_request, _reply, done) => done())
  const echoed = rootEchoes(fastify, defaultVersion)
  fastify.addHook('onRequest', (request, reply, done) => {
    const h = request.headers
    const rawId = h[Header.requestId]
    const idOk = typeof rawId === 'string' && REQUEST_ID.test(rawId)
    // A malformed id is never echoed: the app's own id stands in (a fresh one if it copied the header).
    const requestId = idOk ? rawId : request.id === rawId ? newRequestId() : request.id
    if (!echoed || requestId !== request.id) reply.header(Header.requestId, requestId)
    if (!echoed) reply.header(Header.protocolVersion, defaultVersion)
    if (rawId !== undefined && !idOk) {
      return done(errors.invalidRequest('Mcp-Request-Id must be 1-128 visible ASCII characters'))
    }
    const header = h[Header.protocolVersion]
    if (request.routeOptions.config.mcpJsonRpc === true) {
      // Settled from the message by the JSON-RPC endpoint, so that even a refusal names the request's id.
      request.mcpState = { requestId, version: defaultVersion, era: era(defaultVersion), versionFromHeader: false, principal: ANONYMOUS }
      return admit(request, reply, done)
    }
    let version: ProtocolVersion
    try {
      version = negotiateVersion(typeof header === 'string' ? header : undefined, defaultVersion)
    } catch (err) {
      return done(err as Error)
    }
    if (version !== defaultVersion) reply.header(Header.protocolVersion, version)
    request.mcpState = {
      requestId,
      version,
      era: era(version),
      versionFromHeader: header !== undefined && header !== '',
      principal: ANONYMOUS
    }
    admit(request, reply, done)
  })
  // A method 2026-07-28 removed is not there for a request of that revision, on this face as on /mcp.
  fastify.addHook('onRoute', (route) => {
    const gate = removedGate(route.schema?.operationId)
    if (gate !== undefined) route.preValidation = ([] as preValidationHookHandler[]).concat(route.preValidation ?? [], gate)
  })
  // Between the Origin check and authentication: a preflight carries no token, and only an allowed origin gets here.
  if (opts.cors !== false) await fastify.register(mcpCors, { ...opts.cors, policy })

  const authenticate = opts.authenticate
  fastify.decorate('mcpSessions', authenticate === undefined && opts.sessions)
  if (authenticate !== undefined) {
    const failures = authFailureLimit(opts.rateLimit)
    fastify.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.config.mcpPublic === true) return
      if (failures === undefined) {
        request.mcpState.principal = await authenticate(request, reply)
        return
      }
      failures.check(request.ip)
      try {
        request.mcpState.principal = await authenticate(request, reply)
      } catch (err) {
        if ((err as { status?: number }).status === 401) failures.failed(request.ip)
        throw err
      }
    })
    // Scopes before anything answers a tool call: a stream that would open, a replay from the store.
    const toolCall = `${fastify.prefix}/tools/:name/calls`
    const scopes: preValidationHookHandler = (request, _reply, done) => {
      const { principal } = request.mcpState
      const name = (request.params as { name: string }).name
      const needed = mcp.tools.get(name)?.scopes ?? []
      if (!principal.anonymous && needed.some((s) => !principal.scopes.includes(s))) return done(errors.insufficientScope(`tool ${name}`, needed))
      done()
    }
    fastify.addHook('onRoute', (route) => {
      if (route.url === toolCall && route.method === 'POST') route.preValidation = ([] as preValidationHookHandler[]).concat(route.preValidation ?? [], scopes)
    })
  } else if (opts.sessions) {
    // Without authentication, POST /initialize issues Mcp-Session-Id; that id names the connection.
    fastify.addHook('onRequest', async (request) => {
      const id = request.headers[Header.sessionId]
      if (id === undefined) return
      if (typeof id !== 'string' || !(await mcp.hasSession(id))) {
        throw errors.unknownSession()
      }
      request.mcpState.principal = { id: `session:${id}`, scopes: [], anonymous: true }
    })
    fastify.addHook('onReady', async () => {
      fastify.log.info('MCP: no authentication configured; /initialize issues Mcp-Session-Id, and each session is one logical connection (clients without one share an anonymous connection)')
    })
  } else {
    fastify.addHook('onReady', async () => {
      fastify.log.info('MCP: no authentication configured; every client shares one anonymous logical connection')
    })
  }
  if (mcp.sealer.ephemeral) {
    fastify.addHook('onReady', async () => {
      fastify.log.warn(
        'MCP: requestState is sealed with an ephemeral key; several instances cannot read each other\'s state and a restart invalidates it. Set MCP_STATE_KEYS.'
      )
    })
  }
}

/**
 * The hook of a REST route whose method the modern era does not define: 404 -32601 for a 2026-07-28
 * request, naming what that revision does instead. Only on those routes, so the others pay nothing.
 * Before the params are judged (as a method not offered), after the body is read: its `_meta` may
 * name the version (see `claimedVersion`).
 */
function removedGate(operationId: unknown): preValidationHookHandler | undefined {
  const route = typeof operationId === 'string' ? REST_ROUTES.get(operationId) : undefined
  if (route === undefined) return undefined
  const { eras, instead } = METHODS[route.name]
  if (eras.includes('modern')) return undefined
  // Every removed method says what instead (test/faces/method-table.test.ts holds the table to it).
  const message = `Method not found: ${route.name} is not part of MCP ${LATEST_VERSION}: ${instead!}`
  // The handshake names its version in its body, and a 2025 client sends no header with it: only a
  // request that says 2026-07-28 makes it one of that revision.
  const handshake = route.name === 'initialize'
  return (request, _reply, done) => {
    const claimed = claimedVersion(request)
    const version = claimed ?? (handshake ? undefined : request.mcpState.version)
    done(version !== undefined && era(version) === 'modern' ? errors.methodNotFound(message) : undefined)
  }
}

/**
 * The version a request states: its header, else its `_meta` envelope's (body, or `Mcp-Meta`), as
 * the context will settle it. Undefined when it states none, or one the route will refuse anyway.
 */
function claimedVersion(request: FastifyRequest): ProtocolVersion | undefined {
  const state = request.mcpState
  if (state.versionFromHeader) return state.version
  const stated = (meta: unknown) => {
    const v = (meta as Record<string, unknown> | null | undefined)?.[MetaKey.protocolVersion]
    return typeof v === 'string' && isSupportedVersion(v) ? v : undefined
  }
  const body = stated((request.body as { _meta?: unknown } | null | undefined)?._meta)
  if (body !== undefined || request.headers[Header.meta] === undefined) return body
  try {
    return stated(decodeJsonHeader(Header.meta, request.headers[Header.meta], 'object'))
  } catch {
    return undefined
  }
}

export default fp(admission, { name: 'mcp-admission', fastify: '5.x' })
