import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sendEmpty } from '../src/http/representation.js'
import { settleGet } from '../src/http/meta.js'
import { Accepted, GetHeaders, errorResponses } from '../src/schema/http.js'
import { NO_CONTEXT, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const pingRoute = restRoute('ping')

/** ping: 202 with no body. */
const ping: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.route({
    method: pingRoute.method,
    url: pingRoute.url,
    schema: {
      operationId: pingRoute.operationId,
      summary: 'ping',
      tags: ['lifecycle'],
      headers: GetHeaders,
      response: { 202: Accepted, ...errorResponses() }
    },
    handler: async (request, reply) => {
      METHODS.ping.core(fastify.mcp, {}, NO_CONTEXT[await settleGet(request, reply)])
      return sendEmpty(reply, 202)
    }
  })
}

export default ping
