import closeWithGrace from 'close-with-grace'
import { hostOriginFromConfig, loadConfig, loggerFromConfig, oauthFromConfig, trustProxyFromConfig } from './config.js'
import { createDemoServer } from './demo/catalogue.js'
import { ConfigurationError } from './errors.js'
import { buildServer } from './server.js'
import { createStore } from './store/index.js'

/** `npm start`: the demo server on HOST:PORT (default 127.0.0.1:3000). */
async function main(): Promise<void> {
  const config = loadConfig()
  const store = createStore(config)
  const mcp = createDemoServer({
    pageSize: config.MCP_PAGE_SIZE,
    cacheHints: { ttlMs: config.MCP_CACHE_TTL_MS, cacheScope: config.MCP_CACHE_SCOPE },
    stateTtlMs: config.MCP_STATE_TTL_MS,
    maxRequestMs: config.MCP_MAX_REQUEST_MS,
    ...(config.MCP_STATE_KEYS === undefined ? {} : { stateKeys: config.MCP_STATE_KEYS })
  })
  const app = await buildServer({
    mcp,
    store,
    logger: loggerFromConfig(config),
    bodyLimit: config.MCP_BODY_LIMIT,
    defaultProtocolVersion: config.MCP_DEFAULT_PROTOCOL_VERSION,
    oauth: oauthFromConfig(config),
    idempotencyTtlMs: config.MCP_IDEMPOTENCY_TTL_MS,
    idempotencyLeaseMs: config.MCP_IDEMPOTENCY_LEASE_MS,
    rateLimit: { max: config.MCP_RATE_LIMIT_MAX, timeWindowMs: config.MCP_RATE_LIMIT_WINDOW_MS },
    loadShedding: { maxEventLoopDelayMs: config.MCP_MAX_EVENT_LOOP_DELAY_MS, maxHeapUsedBytes: config.MCP_MAX_HEAP_USED_BYTES },
    trustProxy: trustProxyFromConfig(config),
    docs: config.MCP_DOCS === 'true',
    ...hostOriginFromConfig(config)
  })
  // After the last in-flight request: onClose runs once the server has stopped.
  app.addHook('onClose', () => store.close())
  // SIGTERM/SIGINT: stop accepting (keep-alive requests get 503), let in-flight requests finish for
  // up to the grace period, then exit. Shared state stays in the store for the other instances.
  closeWithGrace({ delay: config.MCP_SHUTDOWN_GRACE_MS, logger: app.log }, async ({ signal, err }) => {
    app.log.info({ signal, err }, 'shutting down')
    await app.close()
  })
  await app.listen({ host: config.HOST, port: config.PORT })
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigurationError ? err.message : err)
  process.exit(1)
})
