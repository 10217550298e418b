import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ApiKey } from './auth/api-keys.js'
import { authSetup, type OAuthOptions } from './auth/oauth.js'
import type { HostOriginOptions } from './auth/origin.js'
import type { Principal } from './core/request-context.js'
import type { McpServer } from './core/mcp-server.js'
import { McpError } from './errors.js'
import { companion } from './store/compose.js'
import { LATEST_VERSION, type ProtocolVersion } from './protocol.js'
import { registerOpenApi } from './http/openapi-document.js'
import { registerConsolePage } from './http/console-page.js'
import { registerDocsPage } from './http/docs-page.js'
import { holdTickShape } from './http/hold-tick-shape.js'
import type { Store } from './store/types.js'
import admission from './plugins/admission.js'
import errorShape from './plugins/error-shape.js'
import idempotency from './plugins/idempotency.js'
import { IdempotentCalls } from './core/idempotency.js'
import { methodsAllowed } from './plugins/method-not-allowed.js'
import rateLimits, { type RateLimitOptions } from './plugins/rate-limit.js'
import streamSlots, { type StreamLimits } from './plugins/stream-slots.js'
import type { CorsOptions } from './plugins/cors.js'
import mcpEndpoint, { type JsonRpcOptions } from './jsonrpc/endpoint.js'
import completionsRoutes from '../routes/completions.js'
import discoverRoutes from '../routes/discover.js'
import initializeRoutes from '../routes/initialize.js'
import logLevelRoutes from '../routes/log-level.js'
import subscriptionsRoutes from '../routes/subscriptions.js'
import openapiRoutes from '../routes/openapi.js'
import pingRoutes from '../routes/ping.js'
import promptsRoutes from '../routes/prompts.js'
import resourcesRoutes from '../routes/resources.js'
import toolsRoutes from '../routes/tools.js'
import notificationsRoutes from '../routes/notifications.js'
import requestsRoutes from '../routes/requests.js'
import tasksRoutes from '../routes/tasks.js'
import wellKnownRoutes from '../routes/well-known.js'
import serverCardRoutes from '../routes/server-card.js'
import { buildServerCard, type CatalogedCard, type ServerCardOptions } from './http/server-card.js'
import webhooks from './webhooks/plugin.js'
import type { WebhookOptions } from './webhooks/options.js'
import type { Observer } from './telemetry/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The protocol core every route calls (see McpServer). */
    mcp: McpServer
    /** Where the MCP routes are mounted ('' at the root), for links such as Location. */
    mcpPrefix: string
    /** The Server Cards of the app's mounts, for its AI Catalog (decorated by buildServer when cards are on). */
    mcpServerCards?: CatalogedCard[]
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
   * Static API keys (docs/authorization.md#api-keys): `Authorization: Bearer <key>` is the key's
   * principal (`apikey:<name>`) with its scopes. Alone, every route needs a key; with `oauth`, a
   * bearer that is no key is verified as a JWT. Not together with `authenticate`.
   * @example
   * const options: Pick<McpPluginOptions, 'apiKeys'> = { apiKeys: [{ principal: 'ci', key: process.env.CI_KEY!, scopes: ['notes:read'] }] }
   */
  apiKeys?: readonly ApiKey[]
  /**
   * How long (ms) a tool call carrying `Mcp-Request-Id` (`POST /tools/{name}/calls`, or `tools/call`
   * on `/mcp`) is replayed to a retry with the same id instead of running again (default 10 minutes; 0: off).
   */
  idempotencyTtlMs?: number
  /**
   * How long a running idempotent call holds its id without renewal (default 30 s; renewed every
   * third of it while it runs): a retry after its instance died runs again after at most this long.
   */
  idempotencyLeaseMs?: number
  /** Per-principal rate limit of the MCP routes (default: none); shared through Redis with a RedisStore. */
  rateLimit?: RateLimitOptions
  /**
   * Bounds on open streams (SSE answers of either face), counted on this instance: per client
   * (principal, or address when anonymous; default 100, 429 beyond) and in all (default 10 000, 503).
   */
  streams?: StreamLimits
  /** Webhooks (`/webhooks`): notifications pushed to URLs the client registers (default: off). */
  webhooks?: WebhookOptions | boolean
  /**
   * CORS for browsers on the origins `allowedOrigins` accepts (any: `*`), on every route and `/mcp`:
   * preflights of the binding's headers, its response headers exposed (docs/http.md). Default on;
   * `false` for an app that answers CORS itself.
   */
  cors?: CorsOptions | boolean
  /**
   * The server's pages (default false): `GET /docs`, an interactive reference of the OpenAPI
   * document, and `GET /console`, a page that runs every flow of the protocol against this server.
   */
  docs?: boolean
  /**
   * Experimental (SEP-2127 is a draft): serve this catalogue's MCP Server Card at
   * `<streamable-http-url>/server-card` (`/mcp/server-card` under the prefix), public, with fields
   * of its own or a `publicUrl` (docs/server-card.md). Default false.
   * @example
   * const options: Pick<McpPluginOptions, 'serverCard'> = { serverCard: { name: 'com.example/notes', publicUrl: 'https://mcp.example.com' } }
   */
  serverCard?: ServerCardOptions | boolean
  /** Telemetry of these routes (spans, metrics): what `startTelemetry` made; `buildServer` passes its own. */
  observer?: Observer
}

/**
 * The MCP Pure HTTP routes as an encapsulated Fastify plugin: register it at the root or under a
 * prefix of an existing app. Its hooks, error handler and 404/405 answers apply to its routes only.
 * It wires plugins (src/plugins/: admission, error shape, OpenAPI, rate limits, idempotent calls,
 * 405s) and the two faces (routes/ for Pure HTTP, src/jsonrpc/ for /mcp) around one McpServer.
 * @example
 * await app.register(mcpPlugin, { prefix: '/mcp-http', mcp })
 */
export const mcpPlugin: FastifyPluginAsync<McpPluginOptions> = async (fastify, opts) => {
  holdTickShape()
  const defaultVersion = opts.defaultProtocolVersion ?? LATEST_VERSION
  if (opts.store !== undefined) opts.mcp.store = opts.store
  const mcp = opts.mcp
  // DPoP proof ids are remembered where the store keeps its state: a replay to another instance is one too.
  const onceKeys = opts.oauth?.dpop === undefined || opts.oauth.dpop.replay !== undefined ? undefined : await companion(mcp.store, 'onceKeys', 'DPoP')
  const { oauth, authenticate } = authSetup(opts, fastify.prefix, onceKeys)
  const metadataUrl = oauth?.metadataUrl
  fastify.decorate('mcp', mcp)
  fastify.decorate('mcpPrefix', fastify.prefix)
  fastify.addHook('onReady', async () => mcp.startServing(fastify.log))
  if (opts.apiKeys !== undefined) {
    // The names only: a key never reaches the log.
    const principals = opts.apiKeys.map((k) => k.principal)
    fastify.addHook('onReady', async () => fastify.log.info({ principals }, `MCP: API keys accepted${oauth === undefined ? '' : ' beside OAuth access tokens'}`))
  }
  fastify.addHook('onClose', async () => mcp.stopServing())
  // First, so that its hooks see each request before admission may refuse it.
  opts.observer?.instrument(fastify, mcp)

  const cors = opts.cors === false ? false : opts.cors === true || opts.cors === undefined ? {} : opts.cors
  await fastify.register(admission, { ...opts, mcp, defaultVersion, authenticate, sessions: opts.sessions === true, cors })
  await fastify.register(errorShape, { metadataUrl })
  await registerOpenApi(fastify, { mcp, metadataUrl, apiKeys: opts.apiKeys !== undefined, dpop: oauth?.metadata.dpop })
  const allowed = await methodsAllowed(fastify)
  await fastify.register(rateLimits, { store: mcp.store, limits: opts.rateLimit })
  await fastify.register(streamSlots, opts.streams ?? {})
  // One deduplication step for both faces: each keeps and replays its own answer's text.
  const calls = new IdempotentCalls(mcp.store.idempotency, { ttlMs: opts.idempotencyTtlMs ?? 600_000, leaseMs: opts.idempotencyLeaseMs ?? 30_000 })
  await fastify.register(idempotency, { calls })

  await fastify.register(initializeRoutes)
  await fastify.register(discoverRoutes)
  await fastify.register(pingRoutes)
  await fastify.register(logLevelRoutes)
  await fastify.register(completionsRoutes)
  await fastify.register(toolsRoutes)
  await fastify.register(promptsRoutes)
  await fastify.register(resourcesRoutes)
  await fastify.register(notificationsRoutes)
  await fastify.register(subscriptionsRoutes, { keepAliveMs: opts.jsonRpc === false ? undefined : opts.jsonRpc?.keepAliveMs })
  await fastify.register(requestsRoutes)
  await fastify.register(tasksRoutes)
  if (opts.webhooks !== undefined && opts.webhooks !== false) await fastify.register(webhooks, opts.webhooks === true ? {} : opts.webhooks)
  if (opts.jsonRpc !== false) await fastify.register(mcpEndpoint, { ...opts.jsonRpc, defaultVersion, metadataUrl, calls })
  await fastify.register(openapiRoutes)
  if (opts.serverCard !== undefined && opts.serverCard !== false) {
    const options = opts.serverCard === true ? {} : opts.serverCard
    const jsonRpcPath = opts.jsonRpc === false ? undefined : (opts.jsonRpc?.path ?? '/mcp')
    // Without a Streamable HTTP endpoint to append to, at the REST face's root.
    const path = `${jsonRpcPath ?? ''}/server-card`
    const apiKeyRequired = opts.apiKeys !== undefined && opts.oauth === undefined
    const card = buildServerCard(mcp, options, { prefix: fastify.prefix, jsonRpcPath, apiKeyRequired })
    fastify.mcpServerCards?.push({ card, path: `${fastify.prefix}${path}`, prefix: fastify.prefix, publicUrl: options.publicUrl })
    await fastify.register(serverCardRoutes, { card, path })
  }
  if (oauth !== undefined) {
    // RFC 9728's path-inserted URL, when it falls under this plugin's prefix (buildServer serves the rest).
    const inserted = oauth.insertedPath !== undefined && oauth.insertedPath.startsWith(`${fastify.prefix}/`) ? oauth.insertedPath.slice(fastify.prefix.length) : undefined
    await fastify.register(wellKnownRoutes, { ...oauth.metadata, alsoAt: inserted })
  }
  await allowed.answer()
  // After the 405 answers: the page's routes (static files under a wildcard) are not MCP methods.
  if (opts.docs === true) {
    await registerDocsPage(fastify, mcp, authenticate !== undefined)
    await registerConsolePage(fastify)
  }
}

export { McpError }
