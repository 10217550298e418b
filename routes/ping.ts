import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sendEmpty } from '../src/http/representation.js'
import { settleGet } from '../src/http/meta.js'
import { Accepted, GetHeaders, errorResponses } from '../src/schema/http.js'

/** ping: 202 with no body. */
const ping: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get(
    '/ping',
    {
      schema: {
        operationId: 'ping',
        summary: 'ping',
        tags: ['lifecycle'],
        headers: GetHeaders,
        response: { 202: Accepted, ...errorResponses() }
      }
    },
    async (request, reply) => {
      await settleGet(request, reply)
      return sendEmpty(reply, 202)
    }
  )
}

export default ping
