import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { openapiDocument } from '../src/http/tool-operations.js'
import { errorResponses } from '../src/schema/http.js'

/** The OpenAPI 3.1 document of this server, including one typed operation per tool. */
const openapi: FastifyPluginAsyncTypebox = async (fastify) => {
  const document = openapiDocument(fastify, fastify.mcp)
  fastify.addHook('onClose', async () => document.stop())
  fastify.get(
    '/openapi.json',
    {
      schema: {
        operationId: 'openapi',
        summary: 'This document',
        tags: ['meta'],
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.1 document.' }), ...errorResponses() }
      }
    },
    async (_request, reply) => reply.type('application/json; charset=utf-8').send(JSON.stringify(document()))
  )
}

export default openapi
