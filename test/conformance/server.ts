import { loopbackOnly } from '../../src/auth/origin.js'
import { buildServer } from '../../src/server.js'
import { createConformanceServer } from './fixtures.js'

/**
 * The conformance fixture on 127.0.0.1:$PORT, its JSON-RPC endpoint at /mcp. Host and Origin are
 * limited to loopback names on that port (the DNS-rebinding scenario checks both ways), so PORT must
 * be the real port, not 0.
 */
const port = Number(process.env.PORT)
const app = await buildServer({
  mcp: createConformanceServer(),
  logger: { level: process.env.LOG_LEVEL ?? 'warn' },
  ...loopbackOnly(port)
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)))
await app.listen({ host: '127.0.0.1', port })
console.log(`conformance fixture at http://localhost:${port}/mcp`)
