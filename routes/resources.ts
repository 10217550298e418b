import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { type ListRequest, sendEmpty, sendResult, serveCached } from '../src/http/representation.js'
import { cancellableByClient, createContext, paramsFromHeaders, paramsFromPost, type RetryParams } from '../src/http/request.js'
import { Accepted, CommonHeaders, CursorQuery, GetHeaders, NotModified, RetryGetHeaders, errorResponses } from '../src/schema/http.js'
import {
  ListResourceTemplatesResultSchema,
  ListResourcesResultSchema,
  ReadResourceBodySchema,
  ReadResourceResponseSchema,
  SubscribeBodySchema
} from '../src/schema/resources.js'

const UriParams = Type.Object({
  uri: Type.String({
    minLength: 1,
    maxLength: 4096,
    description: 'The whole resource URI, percent-encoded as one path segment (encodeURIComponent).'
  })
})

/** resources/list, resources/templates/list, resources/read, resources/subscribe and unsubscribe. */
const resources: FastifyPluginAsyncTypebox = async (fastify) => {
  const mcp = fastify.mcp

  fastify.get(
    '',
    {
      schema: {
        operationId: 'listResources',
        summary: 'resources/list',
        tags: ['resources'],
        querystring: CursorQuery,
        headers: GetHeaders,
        response: { 200: ListResourcesResultSchema, 304: NotModified, ...errorResponses() }
      }
    },
    serveCached(mcp.cacheHints, (request: ListRequest, era) => mcp.list('resources', request.query.cursor, era))
  )

  fastify.get(
    '/templates',
    {
      schema: {
        operationId: 'listResourceTemplates',
        summary: 'resources/templates/list',
        tags: ['resources'],
        querystring: CursorQuery,
        headers: GetHeaders,
        response: { 200: ListResourceTemplatesResultSchema, 304: NotModified, ...errorResponses() }
      }
    },
    serveCached(mcp.cacheHints, (request: ListRequest, era) => mcp.list('templates', request.query.cursor, era))
  )

  // GET reads are HTTP-cacheable (ETag, 304); POST ones are not (RFC 9110 allows 304 only for GET/HEAD),
  // nor are retries: MCP caching forbids caching results that depend on inputResponses/requestState.
  const read = async (request: FastifyRequest, reply: FastifyReply, uri: string, params: RetryParams, get: boolean) => {
    const ctx = cancellableByClient(await createContext(request, reply, params), reply)
    const retry = params.inputResponses !== undefined || params.requestState !== undefined
    return sendResult(request, reply, await mcp.readResource(uri, params, ctx), get && !retry ? mcp.cacheHints : undefined)
  }

  fastify.get(
    '/:uri',
    {
      schema: {
        operationId: 'readResource',
        summary: 'resources/read',
        tags: ['resources'],
        params: UriParams,
        headers: RetryGetHeaders,
        response: { 200: ReadResourceResponseSchema, 304: NotModified, ...errorResponses(404) }
      }
    },
    async (request, reply) => read(request, reply, request.params.uri, paramsFromHeaders(request), true)
  )

  fastify.post(
    '/:uri',
    {
      schema: {
        operationId: 'readResourceWithBody',
        summary: 'resources/read (parameters in the body)',
        description: 'The same as GET, for parameters too large for headers.',
        tags: ['resources'],
        params: UriParams,
        headers: CommonHeaders,
        body: ReadResourceBodySchema,
        response: { 200: ReadResourceResponseSchema, ...errorResponses(404, 413) }
      }
    },
    async (request, reply) => read(request, reply, request.params.uri, paramsFromPost(request, request.body), false)
  )

  const subscription = (subscribe: boolean) => ({
    schema: {
      operationId: subscribe ? 'subscribeResource' : 'unsubscribeResource',
      summary: subscribe ? 'resources/subscribe' : 'resources/unsubscribe',
      tags: ['resources'],
      headers: CommonHeaders,
      body: SubscribeBodySchema,
      response: { 202: Accepted, ...errorResponses(404) }
    }
  })

  fastify.post('/subscribe', subscription(true), async (request, reply) => {
    await mcp.subscribe(await createContext(request, reply, request.body), request.body.uri)
    return sendEmpty(reply, 202)
  })

  fastify.post('/unsubscribe', subscription(false), async (request, reply) => {
    await mcp.unsubscribe(await createContext(request, reply, request.body), request.body.uri)
    return sendEmpty(reply, 202)
  })
}

export default resources
