import closeWithGrace from 'close-with-grace'
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { mcpPlugin } from './app.js'
import type { ApiKey } from './auth/api-keys.js'
import { apiKeysFromConfig, corsFromConfig, hostOriginFromConfig, loadConfig, loggerFromConfig, oauthFromConfig, serverCardFromConfig, trustProxyFromConfig, type Config } from './config.js'
import type { McpServer, McpServerOptions } from './core/mcp-server.js'
import { createDemoServer } from './demo/catalogue.js'
import { ConfigurationError } from './errors.js'
import { buildServer, type BuildServerOptions } from './server.js'
import { createStore } from './store/index.js'
import type { Store } from './store/types.js'
import { webhooksFromConfig } from './webhooks/config.js'
import { startTelemetry, type Observer } from './telemetry/index.js'
import { telemetryFromConfig } from './telemetry/options.js'

/** A catalogue to serve, its store, and where (default: the root). */
export interface Mount {
  mcp: McpServer
  store: Store
  prefix?: string
}

/** The {@link McpServer} options the `MCP_*` settings give. */
export function serverOptionsFromConfig(config: Config): Omit<McpServerOptions, 'name' | 'version'> {
  return {
    pageSize: config.MCP_PAGE_SIZE,
    cacheHints: { ttlMs: config.MCP_CACHE_TTL_MS, cacheScope: config.MCP_CACHE_SCOPE },
    stateTtlMs: config.MCP_STATE_TTL_MS,
    maxRequestMs: config.MCP_MAX_REQUEST_MS,
    taskLeaseMs: config.MCP_TASK_LEASE_MS,
    ...(config.MCP_STATE_KEYS === undefined ? {} : { stateKeys: config.MCP_STATE_KEYS })
  }
}

/**
 * Serve the mounts `make` builds from the configuration on HOST:PORT, with every `MCP_*` setting
 * (`npm start`, the demo; the gateway serves its own way, see src/gateway/serve.ts).
 */
export async function serve(make: (config: Config) => Mount[] | Promise<Mount[]>): Promise<FastifyInstance> {
  const config = loadConfig()
  // Before `make` starts anything: keys that clash stop the start here.
  const keys = apiKeysFromConfig(config)
  const mounts = await make(config)
  const telemetry = await telemetryFor(config)
  const app = await appFor(config, mounts, { observer: telemetry.observer, apiKeys: keys })
  // After the last in-flight request: onClose runs once the server has stopped.
  for (const { store } of mounts) app.addHook('onClose', () => store.close())
  app.addHook('onClose', () => telemetry.stop())
  // SIGTERM/SIGINT: stop accepting (keep-alive requests get 503), let in-flight requests finish for
  // up to the grace period, then exit. Shared state stays in the store for the other instances.
  closeWithGrace({ delay: config.MCP_SHUTDOWN_GRACE_MS, logger: app.log }, async ({ signal, err }) => {
    app.log.info({ signal, err }, 'shutting down')
    await app.close()
  })
  await app.listen({ host: config.HOST, port: config.PORT })
  return app
}

/** The process's telemetry, and how to flush and stop it at the end. */
export interface Telemetry {
  observer: Observer | undefined
  stop(): Promise<void>
}

/** Off unless OTEL_* or MCP_METRICS ask: then no OpenTelemetry package is loaded. */
export async function telemetryFor(config: Config): Promise<Telemetry> {
  const observer = await startTelemetry(telemetryFromConfig(config))
  return { observer, stop: async () => observer?.shutdown() }
}

/** What every app of one process shares: its telemetry, its API keys, and (a gateway's) the server of an {@link AppSlot}. */
export interface AppShared {
  observer: Observer | undefined
  apiKeys: ApiKey[] | undefined
  serverFactory?: BuildServerOptions['serverFactory']
}

/**
 * The app serving `mounts` (the first at its prefix or the root, the others each under its own) with
 * every `MCP_*` setting of `config`; not listening, and owning none of the mounts' stores.
 */
export async function appFor(config: Config, mounts: readonly Mount[], shared: AppShared): Promise<FastifyInstance> {
  const [first, ...others] = mounts
  const plugin = {
    observer: shared.observer,
    defaultProtocolVersion: config.MCP_DEFAULT_PROTOCOL_VERSION,
    oauth: oauthFromConfig(config),
    apiKeys: shared.apiKeys,
    idempotencyTtlMs: config.MCP_IDEMPOTENCY_TTL_MS,
    idempotencyLeaseMs: config.MCP_IDEMPOTENCY_LEASE_MS,
    rateLimit: { max: config.MCP_RATE_LIMIT_MAX, timeWindowMs: config.MCP_RATE_LIMIT_WINDOW_MS },
    streams: { maxPerPrincipal: config.MCP_MAX_STREAMS_PER_PRINCIPAL, max: config.MCP_MAX_STREAMS },
    webhooks: webhooksFromConfig(config),
    docs: config.MCP_DOCS === 'true',
    serverCard: serverCardFromConfig(config),
    cors: corsFromConfig(config),
    ...hostOriginFromConfig(config)
  }
  const app = await buildServer({
    ...plugin,
    ...first!,
    logger: loggerFromConfig(config),
    bodyLimit: config.MCP_BODY_LIMIT,
    requestTimeoutMs: config.MCP_REQUEST_TIMEOUT_MS,
    loadShedding: { maxEventLoopDelayMs: config.MCP_MAX_EVENT_LOOP_DELAY_MS, maxHeapUsedBytes: config.MCP_MAX_HEAP_USED_BYTES },
    trustProxy: trustProxyFromConfig(config),
    telemetry: false,
    ...(shared.serverFactory === undefined ? {} : { serverFactory: shared.serverFactory })
  })
  for (const mount of others) await app.register(mcpPlugin, { ...plugin, ...mount })
  return app
}

/** `npm start` (and `mcp-pure-http demo`): the demo server on HOST:PORT (default 127.0.0.1:3000). */
export async function main(): Promise<void> {
  await serve((config) => [{ mcp: createDemoServer(serverOptionsFromConfig(config)), store: createStore(config) }])
}

/** A start-up failure: a configuration mistake in one line, anything else with its stack. */
export function failed(err: unknown): never {
  console.error(err instanceof ConfigurationError ? err.message : err)
  process.exit(1)
}

// Run when started as `node dist/src/main.js`; not when the bin imports it.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) main().catch(failed)
