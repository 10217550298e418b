import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sendEmpty } from '../src/http/representation.js'
import { createContext } from '../src/http/request.js'
import { Accepted, CommonHeaders, errorResponses } from '../src/schema/http.js'
import { SetLevelBodySchema } from '../src/schema/lifecycle.js'

/** logging/setLevel: the minimum level of log notifications for the caller's logical connection. */
const logLevel: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post(
    '/logLevel',
    {
      schema: {
        operationId: 'setLogLevel',
        summary: 'logging/setLevel',
        tags: ['lifecycle'],
        headers: CommonHeaders,
        body: SetLevelBodySchema,
        response: { 202: Accepted, ...errorResponses() }
      }
    },
    async (request, reply) => {
      await fastify.mcp.setLogLevel(await createContext(request, reply, request.body), request.body.level)
      return sendEmpty(reply, 202)
    }
  )
}

export default logLevel
