import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { sendEmpty, sendResult } from '../src/http/representation.js'
import { cancellableByClient, createContext, paramsFromHeaders, paramsFromPost, type RetryParams } from '../src/http/request.js'
import { Accepted, CommonHeaders, NotModified, RetryGetHeaders, errorResponses } from '../src/schema/http.js'
import { ReadResourceResponseSchema } from '../src/schema/resources.js'
import { listRoute } from '../src/http/list-route.js'
import { restAt, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const readResourceRoute = restRoute('readResource')
const readResourceWithBodyRoute = restRoute('readResourceWithBody')

const subscribeRoute = restRoute('subscribeResource')
const unsubscribeRoute = restRoute('unsubscribeResource')
const READ = METHODS['resources/read']
const UriParams = Type.Object(READ.target)

/** resources/list, resources/templates/list, resources/read, resources/subscribe and unsubscribe. */
const resources: FastifyPluginAsyncTypebox = async (fastify) => {
  const mcp = fastify.mcp

  listRoute(fastify, 'resources/list')

  listRoute(fastify, 'resources/templates/list')

  // GET reads are HTTP-cacheable (ETag, 304); POST ones are not (RFC 9110 allows 304 only for GET/HEAD),
  // nor are retries: MCP caching forbids caching results that depend on inputResponses/requestState.
  const read = async (request: FastifyRequest, reply: FastifyReply, uri: string, params: RetryParams, get: boolean) => {
    const ctx = cancellableByClient(await createContext(request, reply, params), reply)
    const retry = params.inputResponses !== undefined || params.requestState !== undefined
    return sendResult(request, reply, await READ.core(mcp, { ...params, uri }, restAt(ctx.era, ctx)), get && !retry ? mcp.cacheHints : undefined)
  }

  fastify.route({
    method: readResourceRoute.method,
    url: readResourceRoute.url,
    schema: {
      operationId: readResourceRoute.operationId,
      summary: 'resources/read',
      tags: ['resources'],
      params: UriParams,
      headers: RetryGetHeaders,
      response: { 200: ReadResourceResponseSchema, 304: NotModified, ...errorResponses(404) }
    },
    handler: async (request, reply) => read(request, reply, request.params.uri, paramsFromHeaders(request), true)
  })

  fastify.route({
    method: readResourceWithBodyRoute.method,
    url: readResourceWithBodyRoute.url,
    schema: {
      operationId: readResourceWithBodyRoute.operationId,
      summary: 'resources/read (parameters in the body)',
      description: 'The same as GET, for parameters too large for headers.',
      tags: ['resources'],
      params: UriParams,
      headers: CommonHeaders,
      body: READ.body,
      response: { 200: ReadResourceResponseSchema, ...errorResponses(404, 413) }
    },
    handler: async (request, reply) => read(request, reply, request.params.uri, paramsFromPost(request, request.body), false)
  })

  for (const [route, name] of [[subscribeRoute, 'resources/subscribe'], [unsubscribeRoute, 'resources/unsubscribe']] as const) {
    const entry = METHODS[name]
    fastify.route({
      method: route.method,
      url: route.url,
      schema: {
        operationId: route.operationId,
        summary: name,
        tags: ['resources'],
        headers: CommonHeaders,
        body: entry.body,
        response: { 202: Accepted, ...errorResponses(404) }
      },
      handler: async (request, reply) => {
        const ctx = createContext(request, reply, request.body)
        await entry.core(mcp, request.body, restAt(request.mcpState.era, ctx))
        return sendEmpty(reply, 202)
      }
    })
  }
}

export default resources
