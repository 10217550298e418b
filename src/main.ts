import { hostOriginFromConfig, loadConfig, oauthFromConfig } from './config.js'
import { createDemoServer } from './demo/catalogue.js'
import { ConfigurationError } from './errors.js'
import { buildServer } from './server.js'

/** `npm start`: the demo server on HOST:PORT (default 127.0.0.1:3000). */
async function main(): Promise<void> {
  const config = loadConfig()
  const mcp = createDemoServer({
    pageSize: config.MCP_PAGE_SIZE,
    cacheHints: { ttlMs: config.MCP_CACHE_TTL_MS, cacheScope: config.MCP_CACHE_SCOPE },
    stateTtlMs: config.MCP_STATE_TTL_MS,
    maxRequestMs: config.MCP_MAX_REQUEST_MS,
    ...(config.MCP_STATE_KEYS === undefined ? {} : { stateKeys: config.MCP_STATE_KEYS })
  })
  const app = await buildServer({
    mcp,
    logger: { level: config.LOG_LEVEL },
    bodyLimit: config.MCP_BODY_LIMIT,
    defaultProtocolVersion: config.MCP_DEFAULT_PROTOCOL_VERSION,
    oauth: oauthFromConfig(config),
    ...hostOriginFromConfig(config)
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down')
      app.close().then(() => process.exit(0), () => process.exit(1))
    })
  }
  await app.listen({ host: config.HOST, port: config.PORT })
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigurationError ? err.message : err)
  process.exit(1)
})
