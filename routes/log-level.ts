import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sendEmpty } from '../src/http/representation.js'
import { createContext } from '../src/http/request.js'
import { Accepted, CommonHeaders, errorResponses } from '../src/schema/http.js'
import { restAt, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const setLogLevelRoute = restRoute('setLogLevel')
const SET_LEVEL = METHODS['logging/setLevel']

/** logging/setLevel: the minimum level of log notifications for the caller's logical connection. */
const logLevel: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.route({
    method: setLogLevelRoute.method,
    url: setLogLevelRoute.url,
    schema: {
      operationId: setLogLevelRoute.operationId,
      summary: 'logging/setLevel',
      tags: ['lifecycle'],
      headers: CommonHeaders,
      body: SET_LEVEL.body,
      response: { 202: Accepted, ...errorResponses() }
    },
    handler: async (request, reply) => {
      await SET_LEVEL.core(fastify.mcp, request.body, restAt(request.mcpState.era, createContext(request, reply, request.body)))
      return sendEmpty(reply, 202)
    }
  })
}

export default logLevel
