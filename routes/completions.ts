import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sendResult } from '../src/http/representation.js'
import { createContext } from '../src/http/request.js'
import { CompleteBodySchema, CompleteResultSchema } from '../src/schema/completions.js'
import { CommonHeaders, errorResponses } from '../src/schema/http.js'

/** completion/complete for prompt arguments and resource template variables. */
const completions: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post(
    '/completions',
    {
      schema: {
        operationId: 'complete',
        summary: 'completion/complete',
        tags: ['completions'],
        headers: CommonHeaders,
        body: CompleteBodySchema,
        response: { 200: CompleteResultSchema, ...errorResponses(404) }
      }
    },
    async (request, reply) => {
      const ctx = await createContext(request, reply, request.body)
      return sendResult(request, reply, await fastify.mcp.complete(request.body, ctx))
    }
  )
}

export default completions
