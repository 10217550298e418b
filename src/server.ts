import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { mcpPlugin, type McpPluginOptions } from './app.js'
import type { Socket } from 'node:net'
import { ErrorCode } from './errors.js'
import { LATEST_VERSION } from './protocol.js'
import { mcpRequestId } from './headers.js'
import { loadShedding, probes, type PressureOptions } from './http/probes.js'
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
   * OpenTelemetry traces and metrics by the MCP semantic conventions, and `GET /metrics`
   * (docs/observability.md). Default: traces when the `OTEL_*` variables ask for them, else off,
   * and then no `@opentelemetry` package is loaded.
   */
  telemetry?: TelemetryOptions | boolean
}

/**
 * A Fastify instance serving MCP over Pure HTTP, not yet listening: add your own plugins, then
 * `listen()`. `Mcp-Request-Id` is Fastify's request id, so logs and responses share it.
 * @example
 * const app = await buildServer({ mcp })
 * await app.listen({ host: '127.0.0.1', port: 3000 })
 */
export async function buildServer(options: BuildServerOptions): Promise<FastifyInstance> {
  const { logger, bodyLimit, prefix, probes: withProbes, loadShedding: shedding, trustProxy, telemetry, ...plugin } = {
    logger: { level: 'info' },
    bodyLimit: 1024 * 1024,
    ...options
  }
  const observer = plugin.observer ?? (await startTelemetry(telemetry))
  const app = Fastify({
    // With telemetry, each log line names the active span (trace_id, span_id).
    logger: observer === undefined || logger === false ? logger : { ...(logger === true ? {} : logger), mixin: () => observer.logFields() },
    bodyLimit,
    trustProxy: trustProxy ?? false,
    // The client's Mcp-Request-Id, when well-formed, is the log's request id too.
    genReqId: mcpRequestId,
    routerOptions: { maxParamLength: 4096 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    clientErrorHandler: (err, socket) => clientErrorHandler(err, socket, plugin.defaultProtocolVersion ?? LATEST_VERSION)
  }).withTypeProvider<TypeBoxTypeProvider>()
  if (shedding !== undefined) await loadShedding(app, shedding)
  if (withProbes !== false) await app.register(probes(() => plugin.mcp.store))
  if (observer !== undefined) {
    observer.serveMetrics(app)
    if (plugin.observer === undefined) app.addHook('onClose', () => observer.shutdown())
  }
  await app.register(mcpPlugin, { ...plugin, observer, ...(prefix === undefined ? {} : { prefix }) })
  return app
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (headers too large, malformed
 * requests) still get the binding's error body. The usual cause of a 431 is a large `Mcp-Arguments`
 * or `Mcp-Meta`: the POST form of the route takes the same parameters in the body.
 */
const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'Request headers too large: send the parameters in the body with POST'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'Request timeout']
}

function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket, version: string): void {
  // A reset or half-closed socket has nobody to answer: races no test can provoke reliably.
  /* c8 ignore next */
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [status, reason, message] = CLIENT_ERRORS[String(err.code)] ?? [400, 'Bad Request', 'Malformed HTTP request']
  const body = JSON.stringify({ code: ErrorCode.invalidRequest, message })
  /* c8 ignore next */
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nMcp-Protocol-Version: ${version}\r\nConnection: close\r\n\r\n${body}`
    )
  }
  socket.destroy(err)
}
