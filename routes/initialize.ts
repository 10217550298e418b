import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Header } from '../src/headers.js'
import { sendResult } from '../src/http/representation.js'
import { createContext } from '../src/http/request.js'
import { CommonHeaders, errorResponses } from '../src/schema/http.js'
import { restAt, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const initializeRoute = restRoute('initialize')
const INITIALIZE = METHODS.initialize

/** initialize: version negotiation and, for legacy-era clients, their capabilities for the connection. */
const initialize: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.route({
    method: initializeRoute.method,
    url: initializeRoute.url,
    schema: {
      operationId: initializeRoute.operationId,
      summary: 'initialize',
      description: 'Answers with the requested protocol version when supported, else the newest legacy one.',
      tags: ['lifecycle'],
      headers: CommonHeaders,
      body: INITIALIZE.body,
      response: { 200: INITIALIZE.result, ...errorResponses(413) }
    },
    handler: async (request, reply) => {
      const ctx = await createContext(request, reply, request.body)
      const issueSession = fastify.mcpSessions && request.headers[Header.sessionId] === undefined
      const { result, sessionId } = await INITIALIZE.core(fastify.mcp, request.body, { ...restAt(ctx.era, ctx), handshake: { issueSession } })
      if (sessionId !== undefined) reply.header(Header.sessionId, sessionId)
      reply.header(Header.protocolVersion, result.protocolVersion)
      return sendResult(request, reply, result)
    }
  })
}

export default initialize
