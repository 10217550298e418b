import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sendEmpty, sendResult } from '../src/http/representation.js'
import { CommonHeaders, errorResponses } from '../src/schema/http.js'
import {
  CreatedWebhookSchema,
  DeliveriesSchema,
  RegisterWebhookBodySchema,
  WebhookListSchema,
  WebhookParams,
  WebhookSchema
} from '../src/webhooks/schema.js'

/**
 * Webhooks (SEP-1612's planned extension): the caller's logical connection registers URLs that get
 * its notifications pushed, signed the Standard Webhooks way. The logic is src/webhooks/service.ts;
 * a webhook belongs to its creator: anyone else's, like an unknown one, is 404.
 */
const webhooks: FastifyPluginAsyncTypebox = async (fastify) => {
  const service = fastify.mcpWebhooks
  const tags = ['messaging']

  fastify.post(
    '/webhooks',
    {
      schema: {
        operationId: 'registerWebhook',
        summary: 'register a webhook',
        description: 'Notifications of this connection are POSTed to the URL, signed (webhook-id, webhook-timestamp, webhook-signature), instead of being queued.',
        tags,
        headers: CommonHeaders,
        body: RegisterWebhookBodySchema,
        response: { 201: CreatedWebhookSchema, ...errorResponses(413) }
      }
    },
    async (request, reply) => {
      const created = await service.register(request.mcpState.principal.id, request.body)
      reply.code(201).header('location', `${fastify.mcpPrefix}/webhooks/${created.id}`)
      return sendResult(request, reply, created)
    }
  )

  fastify.get(
    '/webhooks',
    { schema: { operationId: 'listWebhooks', summary: 'the connection\'s webhooks', tags, headers: CommonHeaders, response: { 200: WebhookListSchema, ...errorResponses() } } },
    async (request, reply) => sendResult(request, reply, { webhooks: await service.list(request.mcpState.principal.id) })
  )

  fastify.get(
    '/webhooks/:id',
    {
      schema: {
        operationId: 'getWebhook',
        summary: 'one webhook, and whether (and why not) it is active',
        tags,
        params: WebhookParams,
        headers: CommonHeaders,
        response: { 200: WebhookSchema, ...errorResponses(404) }
      }
    },
    async (request, reply) => sendResult(request, reply, await service.get(request.mcpState.principal.id, request.params.id))
  )

  fastify.delete(
    '/webhooks/:id',
    {
      schema: {
        operationId: 'deleteWebhook',
        summary: 'delete a webhook',
        description: 'What it had pending goes back to GET /notifications.',
        tags,
        params: WebhookParams,
        headers: CommonHeaders,
        response: { 204: Type204, ...errorResponses(404) }
      }
    },
    async (request, reply) => {
      await service.delete(request.mcpState.principal.id, request.params.id)
      return sendEmpty(reply, 204)
    }
  )

  fastify.get(
    '/webhooks/:id/deliveries',
    {
      schema: {
        operationId: 'getWebhookDeliveries',
        summary: 'the webhook\'s recent delivery attempts, newest first',
        tags,
        params: WebhookParams,
        headers: CommonHeaders,
        response: { 200: DeliveriesSchema, ...errorResponses(404) }
      }
    },
    async (request, reply) => sendResult(request, reply, { deliveries: await service.deliveries(request.mcpState.principal.id, request.params.id) })
  )
}

const Type204 = { type: 'null', description: 'Deleted.' } as const

export default webhooks
