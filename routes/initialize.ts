import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Header } from '../src/headers.js'
import { sendResult } from '../src/http/representation.js'
import { createContext } from '../src/http/request.js'
import { CommonHeaders, errorResponses } from '../src/schema/http.js'
import { InitializeBodySchema, InitializeResultSchema } from '../src/schema/lifecycle.js'

/** initialize: version negotiation and, for legacy-era clients, their capabilities for the connection. */
const initialize: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post(
    '/initialize',
    {
      schema: {
        operationId: 'initialize',
        summary: 'initialize',
        description: 'Answers with the requested protocol version when supported, else the newest legacy one.',
        tags: ['lifecycle'],
        headers: CommonHeaders,
        body: InitializeBodySchema,
        response: { 200: InitializeResultSchema, ...errorResponses(413) }
      }
    },
    async (request, reply) => {
      const ctx = await createContext(request, reply, request.body)
      const issueSession = fastify.mcpSessions && request.headers[Header.sessionId] === undefined
      const { result, sessionId } = await fastify.mcp.initialize(request.body, ctx, { issueSession })
      if (sessionId !== undefined) reply.header(Header.sessionId, sessionId)
      reply.header(Header.protocolVersion, result.protocolVersion)
      return sendResult(request, reply, result)
    }
  )
}

export default initialize
