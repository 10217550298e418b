import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sendResult } from '../src/http/representation.js'
import { createContext } from '../src/http/request.js'
import { CompleteResultSchema } from '../src/schema/completions.js'
import { CommonHeaders, errorResponses } from '../src/schema/http.js'
import { restAt, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const completeRoute = restRoute('complete')
const COMPLETE = METHODS['completion/complete']

/** completion/complete for prompt arguments and resource template variables. */
const completions: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.route({
    method: completeRoute.method,
    url: completeRoute.url,
    schema: {
      operationId: completeRoute.operationId,
      summary: 'completion/complete',
      tags: ['completions'],
      headers: CommonHeaders,
      body: COMPLETE.body,
      response: { 200: CompleteResultSchema, ...errorResponses(404) }
    },
    handler: async (request, reply) => {
      const ctx = await createContext(request, reply, request.body)
      return sendResult(request, reply, await COMPLETE.core(fastify.mcp, request.body, restAt(ctx.era, ctx)))
    }
  })
}

export default completions
