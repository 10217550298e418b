import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { METHODS, type Server, type ServerOptions } from 'node:http'
import { mcpPlugin, type McpPluginOptions } from './app.js'
import type { Socket } from 'node:net'
import { isLoopbackHost, type HostOriginOptions } from './auth/origin.js'
import { insertedPathOf, protectedResourceMetadata } from './auth/oauth.js'
import wellKnownRoutes from '../routes/well-known.js'
import { aiCatalogRoute } from '../routes/server-card.js'
import { aiCatalog, type CatalogedCard } from './http/server-card.js'
import { errors, type McpError } from './errors.js'
import { LATEST_VERSION } from './protocol.js'
import { mcpRequestId, newRequestId } from './headers.js'
import { loadShedding, probes, type PressureOptions } from './http/probes.js'
import { frameworkErrors, redactedRequest, shapeRootErrors } from './http/root-errors.js'
import { sharedRouteValidators } from './http/route-validators.js'
import { startTelemetry, type TelemetryOptions } from './telemetry/index.js'

export interface BuildServerOptions extends McpPluginOptions {
  /** Fastify logger option (default: info-level JSON logs). */
  logger?: FastifyServerOptions['logger']
  /** Largest request body in bytes (default 1 MiB); beyond it, 413. */
  bodyLimit?: number
  /** Mount the MCP routes under this prefix (default: the root). */
  prefix?: string
  /** `GET /health` and `GET /ready` at the root, outside the MCP routes (default true). */
  probes?: boolean
  /** Answer 503 with `Retry-After` while the process is overloaded (default: off). */
  loadShedding?: PressureOptions
  /** Fastify's `trustProxy`: whose `X-Forwarded-For` names the client (per-IP rate limits behind a proxy). */
  trustProxy?: boolean | string[]
  /**
   * How long a client may take to send a whole request, headers and body (ms, default 30 000; 0: no
   * limit). A slower one gets 408 and its connection closed, so half-sent bodies cannot pin memory.
   * The headers alone must arrive within the same time. Handlers and streamed answers are not limited.
   */
  requestTimeoutMs?: number
  /**
   * OpenTelemetry traces and metrics by the MCP semantic conventions, and `GET /metrics`
   * (docs/observability.md). Default: traces when the `OTEL_*` variables ask for them, else off,
   * and then no `@opentelemetry` package is loaded.
   */
  telemetry?: TelemetryOptions | boolean
  /**
   * Fastify's `serverFactory`: the app on a server made elsewhere (one that several apps share in
   * turn, see {@link AppSlot}), which then owns {@link httpServerOptions} and listening.
   */
  serverFactory?: FastifyServerOptions['serverFactory']
}

/**
 * The HTTP server's limits for a request timeout of `requestTimeoutMs` (0: none): the whole request,
 * headers included, within it. Node checks timeouts every 30 s by default: a 30 s limit could then take a minute.
 */
export function httpServerOptions(requestTimeoutMs: number): ServerOptions {
  const timeout = Math.max(0, requestTimeoutMs)
  return timeout > 0 ? { requestTimeout: timeout, headersTimeout: timeout, connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(timeout / 4))) } : { requestTimeout: 0 }
}

/**
 * A Fastify instance serving MCP over Pure HTTP, not yet listening: add your own plugins, then
 * `listen()`. `Mcp-Request-Id` is Fastify's request id, so logs and responses share it.
 * @example
 * const app = await buildServer({ mcp })
 * await app.listen({ host: '127.0.0.1', port: 3000 })
 */
export async function buildServer(options: BuildServerOptions): Promise<FastifyInstance> {
  const { logger, bodyLimit, prefix, probes: withProbes, loadShedding: shedding, trustProxy, requestTimeoutMs, telemetry, serverFactory, ...plugin } = {
    logger: { level: 'info' } as FastifyServerOptions['logger'],
    bodyLimit: 1024 * 1024,
    requestTimeoutMs: 30_000,
    loopbackByDefault: true,
    ...options
  }
  const version = plugin.defaultProtocolVersion ?? LATEST_VERSION
  const { requestTimeout, ...http } = httpServerOptions(requestTimeoutMs)
  const observer = plugin.observer ?? (await startTelemetry(telemetry))
  const app = Fastify({
    logger: loggerOptions(logger, observer),
    bodyLimit,
    ...(serverFactory === undefined ? { requestTimeout, http } : { serverFactory }),
    // During shutdown the 503 is ours (shapeRootErrors), in the binding's shape.
    return503OnClosing: false,
    frameworkErrors: frameworkErrors(version),
    trustProxy: trustProxy ?? false,
    // The client's Mcp-Request-Id, when well-formed, is the log's request id too.
    genReqId: mcpRequestId,
    routerOptions: { maxParamLength: 4096 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    // One Ajv and one compiled validator per route schema for the whole process (route-validators.ts).
    schemaController: { compilersFactory: { buildValidator: sharedRouteValidators } },
    clientErrorHandler: (err, socket) => clientErrorHandler(err, socket, version)
  }).withTypeProvider<TypeBoxTypeProvider>()
  // Every method Node parses reaches the router, so a known path answers 405 to TRACE or PROPFIND too.
  for (const method of METHODS) if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  shapeRootErrors(app, version, prefix !== undefined && prefix !== '')
  app.addHook('onListen', async function () {
    warnIfExposed(this.server, this.log, plugin)
  })
  if (shedding !== undefined) await loadShedding(app, shedding)
  if (withProbes !== false) await app.register(probes(() => plugin.mcp.store))
  if (observer !== undefined) {
    observer.serveMetrics(app)
    if (plugin.observer === undefined) app.addHook('onClose', () => observer.shutdown())
  }
  if (plugin.serverCard !== undefined && plugin.serverCard !== false) {
    // Every mount registered on this app (serve()'s others too) adds its card here.
    const cards: CatalogedCard[] = []
    app.decorate('mcpServerCards', cards)
    await app.register(aiCatalogRoute, { cards: () => aiCatalog(cards) })
  }
  await app.register(mcpPlugin, { ...plugin, observer, ...(prefix === undefined ? {} : { prefix }) })
  // RFC 9728's path-inserted metadata URL outside the prefix (`/.well-known/oauth-protected-resource/mcp`).
  const inserted = plugin.oauth === undefined ? undefined : insertedPathOf(new URL(plugin.oauth.audience))
  if (inserted !== undefined && prefix !== undefined && !inserted.startsWith(`${prefix}/`)) {
    await app.register(wellKnownRoutes, { ...protectedResourceMetadata(plugin.oauth!), alsoAt: inserted, onlyAlso: true, mcp: plugin.mcp })
  }
  return app
}

/** With no allowedHosts, a server listening beyond loopback accepts any Host header: say so. */
export function warnIfExposed(server: Server, log: FastifyBaseLogger, options: HostOriginOptions): void {
  if (options.allowedHosts !== undefined || options.loopbackByDefault !== true) return
  const address = server.address()
  if (address !== null && typeof address !== 'string' && !isLoopbackHost(address.address)) {
    log.warn({ address: address.address }, 'MCP: listening on a non-loopback address with no allowedHosts: any Host header is accepted (set allowedHosts, MCP_ALLOWED_HOSTS, against DNS rebinding)')
  }
}

/**
 * The logger options with tokens redacted from logged URLs and, with telemetry, the active span
 * (trace_id, span_id) on each line.
 */
function loggerOptions(logger: FastifyServerOptions['logger'], observer: { logFields(): Record<string, string> } | undefined): FastifyServerOptions['logger'] {
  if (logger === false || logger === undefined) return logger
  // `true` is Fastify's default logger: it redacts too.
  const options = logger === true ? {} : logger
  const redacted = { ...options, serializers: { req: redactedRequest, ...options.serializers } }
  return observer === undefined ? redacted : { ...redacted, mixin: () => observer.logFields() }
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (headers too large, malformed
 * requests) still get the binding's error body. The usual cause of a 431 is a large `Mcp-Arguments`
 * or `Mcp-Meta`: the POST form of the route takes the same parameters in the body.
 */
const CLIENT_ERRORS: Record<string, [string, () => McpError]> = {
  HPE_HEADER_OVERFLOW: ['Request Header Fields Too Large', errors.headersTooLarge],
  ERR_HTTP_REQUEST_TIMEOUT: ['Request Timeout', errors.requestTimeout]
}

function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket, version: string): void {
  // A reset or half-closed socket has nobody to answer: races no test can provoke reliably.
  /* c8 ignore next */
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [reason, make] = CLIENT_ERRORS[String(err.code)] ?? ['Bad Request', errors.malformedHttp]
  const error = make()
  const body = JSON.stringify(error)
  /* c8 ignore next */
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${error.status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nMcp-Protocol-Version: ${version}\r\nMcp-Request-Id: ${newRequestId()}\r\nConnection: close\r\n\r\n${body}`
    )
  }
  socket.destroy(err)
}
