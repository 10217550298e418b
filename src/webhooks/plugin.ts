import type { FastifyPluginAsync } from 'fastify'
import { companion } from '../store/compose.js'
import webhookRoutes from '../../routes/webhooks.js'
import { withWebhooks } from './decorate.js'
import type { WebhookOptions } from './options.js'
import { WebhookService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The webhooks of this plugin's routes (src/webhooks/service.ts). */
    mcpWebhooks: WebhookService
  }
}

/**
 * Webhooks on the MCP plugin: the service, the routes, and the store the core sees with its mailbox
 * wrapped so that notifications reach webhooks first. Pending deliveries live beside the core's
 * state, in the store's `webhooks` companion (Redis: same connection and prefix), unless `store`
 * says where; a store without that companion refuses to start (see docs/backends.md).
 */
const webhooks: FastifyPluginAsync<WebhookOptions> = async (fastify, opts) => {
  const mcp = fastify.mcp
  const inner = mcp.store
  const store = opts.store ?? (await companion(inner, 'webhooks', 'Webhooks'))
  const service = new WebhookService(store, inner.mailbox, opts, fastify.log)
  const wrapped = withWebhooks(inner, service)
  mcp.store = wrapped
  fastify.decorate('mcpWebhooks', service)
  fastify.addHook('onReady', async () => service.start())
  fastify.addHook('onClose', async () => {
    await service.stop()
    // Not when a later app serving the same server (a gateway's reload) has set its own since.
    if (mcp.store === wrapped) mcp.store = inner
    if (opts.store === undefined) await store.close()
  })
  await fastify.register(webhookRoutes)
}

export default webhooks
