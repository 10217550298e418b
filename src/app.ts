import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, HTTPMethods, HookHandlerDoneFunction } from 'fastify'
import { withResourceMetadata } from './auth/bearer.js'
import { oauthSetup, type OAuthOptions } from './auth/oauth.js'
import { hostOriginCheck, type HostOriginOptions } from './auth/origin.js'
import { ANONYMOUS, type Principal } from './core/context.js'
import type { McpServer } from './core/mcp-server.js'
import { ConfigurationError, ErrorCode, McpError, errors } from './errors.js'
import { Header, REQUEST_ID, newRequestId } from './headers.js'
import { sendError, toMcpError } from './http/errors.js'
import type { Abortable } from './http/request.js'
import { idempotentToolCalls } from './http/idempotency.js'
import { registerOpenApi } from './http/openapi-document.js'
import { registerDocsPage } from './http/docs-page.js'
import { rateLimits, type RateLimitOptions } from './http/limits.js'
import { era, negotiateVersion, LATEST_VERSION, type ProtocolVersion } from './protocol.js'
import type { Store } from './store/types.js'
import completionsRoutes from '../routes/completions.js'
import discoverRoutes from '../routes/discover.js'
import initializeRoutes from '../routes/initialize.js'
import logLevelRoutes from '../routes/log-level.js'
import mcpEndpoint, { type JsonRpcOptions } from '../routes/mcp.js'
import openapiRoutes from '../routes/openapi.js'
import pingRoutes from '../routes/ping.js'
import promptsRoutes from '../routes/prompts.js'
import resourcesRoutes from '../routes/resources.js'
import toolsRoutes from '../routes/tools.js'
import notificationsRoutes from '../routes/notifications.js'
import requestsRoutes from '../routes/requests.js'
import tasksRoutes from '../routes/tasks.js'
import wellKnownRoutes from '../routes/well-known.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers without authentication (the RFC 9728 metadata). */
    mcpPublic?: boolean
    /** The JSON-RPC endpoint: it reads the protocol version from the message, not before it. */
    mcpJsonRpc?: boolean
  }
}

export interface McpPluginOptions extends HostOriginOptions {
  /** The catalogue and protocol logic to serve. */
  mcp: McpServer
  /** Shared state; defaults to a {@link MemoryStore}. */
  store?: Store
  /**
   * Without authentication: issue an `Mcp-Session-Id` from `/initialize` and treat each session as
   * its own logical connection (default false: one shared anonymous connection).
   */
  sessions?: boolean
  /** The version of a request that sends no `Mcp-Protocol-Version` (default 2026-07-28). */
  defaultProtocolVersion?: ProtocolVersion
  /**
   * The Streamable HTTP (JSON-RPC) endpoint beside the Pure HTTP routes (default: at `/mcp` under the
   * plugin's prefix); `false` serves the Pure HTTP routes alone.
   */
  jsonRpc?: JsonRpcOptions | false
  /**
   * Identify the caller; throw an {@link McpError} (401/403) to refuse. Default: one anonymous
   * connection. Tool scopes are checked for every principal that is not `anonymous`: return
   * `anonymous: true` only for callers no authentication applies to.
   */
  authenticate?: (request: FastifyRequest) => Promise<Principal>
  /**
   * OAuth 2.1 resource server: bearer JWTs checked on every route (see `bearerAuth`) and
   * `/.well-known/oauth-protected-resource` (RFC 9728). Replaces `authenticate`.
   * @example
   * { oauth: { issuer: 'https://auth.example.com', audience: 'https://mcp.example.com',
   *            jwksUrl: 'https://auth.example.com/jwks.json' } }
   */
  oauth?: OAuthOptions
  /**
   * How long (ms) a `POST /tools/{name}/calls` carrying `Mcp-Request-Id` is replayed to a retry with
   * the same id instead of running again (default 10 minutes; 0: off).
   */
  idempotencyTtlMs?: number
  /**
   * How long a running idempotent call holds its id without renewal (default 30 s; renewed every
   * third of it while it runs): a retry after its instance died runs again after at most this long.
   */
  idempotencyLeaseMs?: number
  /** Per-principal rate limit of the MCP routes (default: none); shared through Redis with a RedisStore. */
  rateLimit?: RateLimitOptions
  /** `GET /docs`: an interactive reference of the OpenAPI document, served by this server (default false). */
  docs?: boolean
}

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']

/**
 * The MCP Pure HTTP routes as an encapsulated Fastify plugin: register it at the root or under a
 * prefix of an existing app. Its hooks, error handler and 404/405 answers apply to its routes only.
 * @example
 * await app.register(mcpPlugin, { prefix: '/mcp-http', mcp })
 */
export const mcpPlugin: FastifyPluginAsync<McpPluginOptions> = async (fastify, opts) => {
  const defaultVersion = opts.defaultProtocolVersion ?? LATEST_VERSION
  if (opts.store !== undefined) opts.mcp.store = opts.store
  const store = opts.mcp.store
  fastify.decorate('mcp', opts.mcp)
  fastify.decorate('mcpStore', store)
  const inflight = new Map<string, Abortable>()
  fastify.decorate('mcpInflight', inflight)
  fastify.decorate('mcpPrefix', fastify.prefix)
  fastify.decorateRequest('mcpState', null as never)
  // notifications/cancelled, heard on any instance, aborts the request here if it runs here.
  const stopCancels = store.onCancel((owner, requestId, reason) => {
    inflight.get(`${owner}\0${requestId}`)?.abort(new Error(reason ?? 'Cancelled by the client'))
  })
  fastify.addHook('onClose', async () => stopCancels())
  fastify.addHook('onReady', async () => opts.mcp.startServing())

  // Host and Origin are checked in the same hook, after the id and version: one hook a request.
  const hostOrigin = hostOriginCheck(opts)
  const admit: (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void = hostOrigin ?? ((_request, _reply, done) => done())
  fastify.addHook('onRequest', (request, reply, done) => {
    const h = request.headers
    const rawId = h[Header.requestId]
    const idOk = typeof rawId === 'string' && REQUEST_ID.test(rawId)
    // A malformed id is never echoed: the app's own id stands in (a fresh one if it copied the header).
    const requestId = idOk ? rawId : request.id === rawId ? newRequestId() : request.id
    reply.header(Header.requestId, requestId)
    reply.header(Header.protocolVersion, defaultVersion)
    if (rawId !== undefined && !idOk) {
      return done(errors.invalidRequest('Mcp-Request-Id must be 1-128 visible ASCII characters'))
    }
    const header = h[Header.protocolVersion]
    if (request.routeOptions.config.mcpJsonRpc === true) {
      // Settled from the message by routes/mcp.ts, so that even a refusal names the request's id.
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
  if (opts.oauth !== undefined && opts.authenticate !== undefined) {
    throw new ConfigurationError('mcpPlugin: give either oauth or authenticate, not both')
  }
  const oauth = opts.oauth === undefined ? undefined : oauthSetup(opts.oauth, fastify.prefix)
  const authenticate = oauth?.authenticate ?? opts.authenticate
  if (authenticate !== undefined) {
    fastify.addHook('onRequest', async (request) => {
      if (request.routeOptions.config.mcpPublic === true) return
      request.mcpState.principal = await authenticate(request)
    })
  } else if (opts.sessions === true) {
    // Without authentication, POST /initialize issues Mcp-Session-Id; that id names the connection.
    fastify.addHook('onRequest', async (request) => {
      const id = request.headers[Header.sessionId]
      if (id === undefined) return
      if (typeof id !== 'string' || !(await store.hasSession(id))) {
        throw errors.notFound('Unknown or expired Mcp-Session-Id: initialize again', ErrorCode.invalidRequest)
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
  fastify.decorate('mcpSessions', authenticate === undefined && opts.sessions === true)
  if (opts.mcp.sealer.ephemeral) {
    fastify.addHook('onReady', async () => {
      fastify.log.warn(
        'MCP: requestState is sealed with an ephemeral key; several instances cannot read each other\'s state and a restart invalidates it. Set MCP_STATE_KEYS.'
      )
    })
  }

  // MCP bodies are JSON; anything else is 415, not a string that fails validation later.
  fastify.removeContentTypeParser('text/plain')
  // Every route sends JSON text it built itself; nothing is stripped by a response schema.
  fastify.setSerializerCompiler(() => (data) => JSON.stringify(data))
  const metadataUrl = oauth?.metadataUrl
  fastify.setErrorHandler((err, request, reply) => {
    const error = toMcpError(err, request)
    sendError(reply, metadataUrl === undefined ? error : withResourceMetadata(error, metadataUrl))
  })
  fastify.setNotFoundHandler((request, reply) => {
    sendError(reply, errors.methodNotFound(`No MCP method at ${request.method} ${request.url.split('?')[0]}`))
  })

  await registerOpenApi(fastify, { mcp: opts.mcp, metadataUrl: oauth?.metadataUrl })

  // Collect every method of every path so a wrong method is answered 405 with Allow, not 404.
  const allowed = new Map<string, Set<string>>()
  fastify.addHook('onRoute', (route) => {
    // The JSON-RPC endpoint answers its own 405s, in the JSON-RPC envelope.
    if (route.config?.mcpJsonRpc === true) return
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const url = route.url.slice(fastify.prefix.length)
    const set = allowed.get(url) ?? new Set<string>()
    for (const m of methods) set.add(m)
    allowed.set(url, set)
  })
  await rateLimits(fastify, store, opts.rateLimit)
  idempotentToolCalls(fastify, store, { ttlMs: opts.idempotencyTtlMs ?? 600_000, leaseMs: opts.idempotencyLeaseMs ?? 30_000 })
  await fastify.register(initializeRoutes)
  await fastify.register(discoverRoutes)
  await fastify.register(pingRoutes)
  await fastify.register(logLevelRoutes)
  await fastify.register(completionsRoutes)
  await fastify.register(toolsRoutes, { prefix: '/tools' })
  await fastify.register(promptsRoutes, { prefix: '/prompts' })
  await fastify.register(resourcesRoutes, { prefix: '/resources' })
  await fastify.register(notificationsRoutes)
  await fastify.register(requestsRoutes)
  await fastify.register(tasksRoutes)
  if (opts.jsonRpc !== false) await fastify.register(mcpEndpoint, { ...opts.jsonRpc, defaultVersion, metadataUrl })
  await fastify.register(openapiRoutes)
  if (oauth !== undefined) await fastify.register(wellKnownRoutes, oauth.metadata)
  await fastify.register(async (f: FastifyInstance) => {
    for (const [url, set] of [...allowed]) {
      const allow = [...set].sort()
      const others = METHODS.filter((m) => !set.has(m))
      f.route({
        method: others,
        url,
        schema: { hide: true },
        handler: (_request, reply) => sendError(reply, errors.methodNotAllowed(allow))
      })
    }
  })
  // After the 405 answers: the page's routes (static files under a wildcard) are not MCP methods.
  if (opts.docs === true) await registerDocsPage(fastify, opts.mcp)
}

export { McpError }
