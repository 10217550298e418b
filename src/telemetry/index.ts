import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import { settleTelemetry, type TelemetryOptions } from './options.js'

export type { TelemetryOptions }

/**
 * The one seam between the server and its telemetry: `mcpPlugin` hands it each scope it serves,
 * `buildServer` its logger and root. Made by {@link startTelemetry} only when something is on.
 */
export interface Observer {
  /** Hooks on one MCP scope (both faces), and wrappers of its McpServer's store and sealer. */
  instrument(fastify: FastifyInstance, mcp: McpServer): void
  /** Fields each log line gets: `trace_id` and `span_id` of the active span (a pino mixin). */
  logFields(): Record<string, string>
  /** `GET /metrics` at the root of `app`, when metrics are on there (not on a port of their own). */
  serveMetrics(app: FastifyInstance): void
  /** Flush what is buffered and stop the exporters. */
  shutdown(): Promise<void>
}

/**
 * Start telemetry as `option` and the `OTEL_*` variables say, or resolve to undefined when nothing
 * is on: then no `@opentelemetry/*` module is loaded (they are imported here, on demand).
 */
export async function startTelemetry(option: TelemetryOptions | boolean | undefined, env: NodeJS.ProcessEnv = process.env): Promise<Observer | undefined> {
  const settled = settleTelemetry(option, env)
  if (settled === undefined) return undefined
  const { createObserver } = await import('./sdk.js')
  return createObserver(settled)
}
