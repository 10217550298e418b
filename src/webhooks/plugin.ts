import type { FastifyPluginAsync } from 'fastify'
import { RedisStore } from '../store/redis.js'
import webhookRoutes from '../../routes/webhooks.js'
import { withWebhooks } from './decorate.js'
import { MemoryWebhookStore } from './memory.js'
import type { WebhookOptions } from './options.js'
import { RedisWebhookStore } from './redis.js'
import { WebhookService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The webhooks of this plugin's routes (src/webhooks/service.ts). */
    mcpWebhooks: WebhookService
  }
}

/**
 * Webhooks on the MCP plugin: the service, the routes, and the store the core sees wrapped so that
 * notifications reach webhooks first. Pending deliveries live beside the core's state: in Redis
 * (same connection and prefix) with a RedisStore, in memory otherwise, unless `store` says where.
 */
const webhooks: FastifyPluginAsync<WebhookOptions> = async (fastify, opts) => {
  const mcp = fastify.mcp
  const inner = mcp.store
  const store = opts.store ?? (inner instanceof RedisStore ? new RedisWebhookStore(inner.client, inner.prefix) : new MemoryWebhookStore())
  const service = new WebhookService(store, inner, opts, fastify.log)
  mcp.store = withWebhooks(inner, service)
  fastify.decorate('mcpWebhooks', service)
  fastify.addHook('onReady', async () => service.start())
  fastify.addHook('onClose', async () => {
    await service.stop()
    mcp.store = inner
    if (opts.store === undefined) await store.close()
  })
  await fastify.register(webhookRoutes)
}

export default webhooks
