import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { openEventStream, restFraming } from '../src/http/event-stream.js'
import { restRoute } from '../src/http/rest-route.js'
import { ListenStreams } from '../src/messaging/listen.js'
import { METHODS } from '../src/methods.js'
import { CommonHeaders, errorResponses } from '../src/schema/http.js'

const listenRoute = restRoute('listenSubscriptions')
const LISTEN = METHODS['subscriptions/listen']

export interface SubscriptionsOptions {
  /** How often a quiet stream sends a keep-alive comment (default 15 s). */
  keepAliveMs?: number | undefined
}

/**
 * subscriptions/listen (2026-07-28) on the Pure HTTP face: the same stream as on /mcp, with the
 * events named as a streamed tool call names them. It replaces `POST /resources/subscribe` and the
 * polling of list changes for a client that can hold a response open.
 */
const subscriptions: FastifyPluginAsyncTypebox<SubscriptionsOptions> = async (fastify, opts) => {
  const streams = new ListenStreams(opts.keepAliveMs ?? 15_000)
  fastify.addHook('preClose', async () => streams.closeAll())
  fastify.route({
    method: listenRoute.method,
    url: listenRoute.url,
    schema: {
      operationId: listenRoute.operationId,
      summary: 'subscriptions/listen',
      description:
        'A stream of Server-Sent Events that stays open: first a `notification` event `notifications/subscriptions/acknowledged` naming what is honoured, then the list changes and `notifications/resources/updated` asked for, each tagged with `_meta["io.modelcontextprotocol/subscriptionId"]` (the request\'s `Mcp-Request-Id`). When the server stops, a `result` event, then the end.',
      tags: ['messaging'],
      headers: CommonHeaders,
      body: LISTEN.body,
      response: {
        200: { description: 'The event stream.', content: { 'text/event-stream': { schema: Type.String() } } },
        ...errorResponses()
      }
    },
    handler: async (request, reply) => {
      streams.open(fastify.mcp, request.mcpState.requestId, request.body.notifications, openEventStream(request, reply, streams.keepAliveMs, restFraming))
      return reply
    }
  })
}

export default subscriptions
