import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../src/errors.js'
import { Header } from '../src/headers.js'
import { sendEmpty, sendResult } from '../src/http/representation.js'
import { Accepted, CommonHeaders, errorResponses } from '../src/schema/http.js'
import { ClientResponseSchema, MessageSchema } from '../src/schema/messaging.js'
import { Type } from '@sinclair/typebox'
import { hasNoBody } from './notifications.js'

/**
 * Server-to-client requests (SEP-1612): `POST /requests` hands out the oldest active request (it is
 * pending until answered, and active again after the redelivery timeout, same id); `POST /responses`
 * answers one, checked against what it asked.
 */
const requests: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post(
    '/requests',
    {
      schema: {
        operationId: 'takeRequest',
        summary: 'the next server-to-client request',
        description: 'The body must be empty. 200 with the request and its Mcp-Request-Id, or 204 when none waits.',
        tags: ['messaging'],
        headers: CommonHeaders,
        response: { 200: MessageSchema, 204: Type.Null({ description: 'No request waits.' }), ...errorResponses() }
      },
      // Before the body is parsed: any body at all is refused, and an empty one is not parsed as JSON.
      onRequest: (request, _reply, done) => {
        if (!hasNoBody(request)) return done(errors.invalidRequest('POST /requests takes no body'))
        delete request.headers['content-type']
        done()
      }
    },
    async (request, reply) => {
      const next = await fastify.mcp.messages.takeRequest(request.mcpState.principal.id)
      if (next === undefined) return sendEmpty(reply, 204)
      reply.header(Header.requestId, next.id)
      return sendResult(request, reply, next.request)
    }
  )

  fastify.post(
    '/responses',
    {
      schema: {
        operationId: 'answerRequest',
        summary: 'answer a server-to-client request',
        description: 'Mcp-Request-Id names the request; the body is its ClientResult.',
        tags: ['messaging'],
        headers: Type.Object({ ...CommonHeaders.properties, 'mcp-request-id': Type.String({ minLength: 1, maxLength: 128 }) }),
        body: ClientResponseSchema,
        response: { 202: Accepted, ...errorResponses(404, 413) }
      }
    },
    async (request, reply) => {
      const body = request.body as Record<string, unknown>
      const isError = typeof body.error === 'object' && body.error !== null && Object.keys(body).length === 1
      const answer = isError ? { error: body.error as { code: number; message: string } } : { result: body }
      await fastify.mcp.messages.answer(request.mcpState.principal.id, request.mcpState.requestId, answer)
      return sendEmpty(reply, 202)
    }
  )
}

export default requests
