import type { FastifyInstance } from 'fastify'
import type { Representation } from '../core/list-cache.js'
import { METHODS } from '../methods.js'
import { CursorQuery, GetHeaders, NotModified, errorResponses } from '../schema/http.js'
import { type ListRequest, serveCached } from './representation.js'
import { NO_CONTEXT } from './rest-route.js'

/** The list methods: each a GET with a cursor, answered from the list cache with its ETag. */
export type ListMethod = 'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list'

/**
 * Register a list method's REST route, all of it from the method table (URL, operationId, result
 * schema, core call): `?cursor=`, `Mcp-Meta`, `If-None-Match` and 304, served synchronously from
 * what the server keeps serialized (see {@link serveCached}).
 */
export function listRoute(fastify: FastifyInstance, name: ListMethod): void {
  const entry = METHODS[name]
  const [route] = entry.rest
  const mcp = fastify.mcp
  fastify.route({
    method: route.method,
    url: route.url,
    schema: {
      operationId: route.operationId,
      summary: name,
      tags: [name.split('/')[0]!],
      querystring: CursorQuery,
      headers: GetHeaders,
      response: { 200: entry.result, 304: NotModified, ...errorResponses() }
    },
    handler: serveCached(mcp.cacheHints, (request: ListRequest, era) => entry.core(mcp, { cursor: request.query.cursor }, NO_CONTEXT[era]) as Representation)
  })
}
