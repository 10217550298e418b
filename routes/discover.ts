import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { serveCached } from '../src/http/representation.js'
import { GetHeaders, NotModified, errorResponses } from '../src/schema/http.js'
import { NO_CONTEXT, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const discoverRoute = restRoute('discover')

/** server/discover: versions, capabilities and identity, cacheable with an ETag. */
const discover: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.route({
    method: discoverRoute.method,
    url: discoverRoute.url,
    schema: {
      operationId: discoverRoute.operationId,
      summary: 'server/discover',
      tags: ['lifecycle'],
      headers: GetHeaders,
      response: { 200: METHODS['server/discover'].result, 304: NotModified, ...errorResponses() }
    },
    handler: serveCached(fastify.mcp.cacheHints, (_request, era) => METHODS['server/discover'].core(fastify.mcp, {}, NO_CONTEXT[era]))
  })
}

export default discover
