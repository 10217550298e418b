import { ANONYMOUS, McpServer, MemoryStore, RedisStore, buildServer, loopbackOnly } from '../../src/index.js'
import type { FastifyRequest } from 'fastify'
import { benchNotification, benchTools, connectionCount, connectionId, fillerAnswer, notificationCount, port, toolCount } from '../catalogue.js'

// This project's server with the bench catalogue (TOOLS tools, and bench_task below). The list is
// one page, as the SDK servers answer it: bare Fastify sends the same bytes (test/deploy/bench-fair.test.ts),
// the SDK servers the same tools but bench_task.
const count = toolCount()
const mcp = new McpServer({ name: 'bench', version: '1.0.0', pageSize: count + 1 })
for (const tool of benchTools(count)) {
  const { name, title, description, input, annotations } = tool
  mcp.tool({ name, title, description, input, annotations }, (args: Record<string, unknown>) =>
    name === 'echo' ? String(args.text) : fillerAnswer(name, String(args.query))
  )
}
// A tool that runs as a task for clients that take tasks, and finishes at once: the bench measures
// the task machinery (create, store, poll), not the work.
mcp.tool({ name: 'bench_task', title: 'Bench task', task: 'optional' }, () => 'done')

// The Redis store when the runner started a redis-server for this phase, else memory; NOTIFICATIONS
// queued for the (anonymous) connection before the first request.
const url = process.env.MCP_REDIS_URL
// Tasks live 1 s (the least) but are created faster than 10,000 a second, the stores' default
// maxTasks, and one client's 8 MiB of tasks kept (~260 bytes each) filled at ~32,000: higher limits,
// so the bench measures creating tasks, not refusing them (bare keeps all).
// With CONNECTIONS, room for every one of them beside the anonymous connection of /ping.
const connections = connectionCount()
const GiB = 1024 ** 3
const limits = { maxTasks: 100_000, maxTaskBytes: GiB, maxTaskBytesPerPrincipal: GiB, maxConnections: Math.max(10_000, connections + 1) }
const store = url === undefined ? new MemoryStore(limits) : new RedisStore({ url, prefix: `bench-${process.pid}:`, limits, functions: process.env.MCP_REDIS_FUNCTIONS === 'off' ? 'off' : 'auto' })
for (let i = 0; i < notificationCount(); i++) await store.mailbox.pushNotification(ANONYMOUS.id, benchNotification(i))
// CONNECTIONS logical connections, one notification queued for each: the query parameter `c`
// names the caller's (see connectionCount), as an authenticate hook would from a token.
for (let c = 0; c < connections; c++) await store.mailbox.pushNotification(connectionId(String(c)), benchNotification(c))
const authenticate = async (request: FastifyRequest) => {
  const c = (request.query as { c?: string }).c
  return c === undefined ? ANONYMOUS : { id: connectionId(c), scopes: [], anonymous: false }
}
const app = await buildServer({ mcp, store, logger: false, ...loopbackOnly(port()), ...(connections > 0 ? { authenticate } : {}) })
await app.listen({ host: '127.0.0.1', port: port() })
// Idle keep-alive connections (the runner's own readiness and ETag fetches) must not hold close()
// past the runner's kill: a --profile run writes its profile only on a clean exit.
process.once('SIGTERM', () => {
  const closing = app.close()
  app.server.closeAllConnections()
  void closing.then(() => store.close()).then(() => process.exit(0))
})
