import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { serveCached } from '../src/http/representation.js'
import { GetHeaders, NotModified, errorResponses } from '../src/schema/http.js'
import { DiscoverResultSchema } from '../src/schema/lifecycle.js'

/** server/discover: versions, capabilities and identity, cacheable with an ETag. */
const discover: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get(
    '/discover',
    {
      schema: {
        operationId: 'discover',
        summary: 'server/discover',
        tags: ['lifecycle'],
        headers: GetHeaders,
        response: { 200: DiscoverResultSchema, 304: NotModified, ...errorResponses() }
      }
    },
    serveCached(fastify.mcp.cacheHints, (_request, era) => fastify.mcp.discover(era))
  )
}

export default discover
