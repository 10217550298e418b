import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { errors } from '../src/errors.js'
import { settleGet } from '../src/http/meta.js'
import { sendEmpty, sendResult } from '../src/http/representation.js'
import { createContext } from '../src/http/request.js'
import { GetHeaders, errorResponses } from '../src/schema/http.js'
import { Accepted } from '../src/schema/http.js'
import { ClientNotificationsSchema, MessageGroupHeaders, ServerNotificationsSchema } from '../src/schema/messaging.js'

/**
 * Notifications both ways (SEP-1612): GET hands out the connection's current group with
 * `Mcp-Message-Group`, the same group until POST acknowledges it; POST also takes the client's own
 * notifications (cancellation, initialized, roots changed).
 */
const notifications: FastifyPluginAsyncTypebox = async (fastify) => {
  const mcp = fastify.mcp

  fastify.get(
    '/notifications',
    {
      schema: {
        operationId: 'getNotifications',
        summary: 'notifications to the client',
        description: 'A non-empty answer carries Mcp-Message-Group; acknowledge it with POST /notifications.',
        tags: ['messaging'],
        headers: GetHeaders,
        response: { 200: ServerNotificationsSchema, ...errorResponses() }
      }
    },
    async (request, reply) => {
      await settleGet(request, reply)
      const group = await mcp.messages.takeNotifications(request.mcpState.principal.id)
      if (group === undefined) return sendResult(request, reply, [])
      reply.header('mcp-message-group', group.id)
      // A store that keeps the group serialized (Redis) hands its JSON over: not decoded and encoded again.
      if (group.json !== undefined) return (reply as FastifyReply).type('application/json; charset=utf-8').send(group.json)
      return sendResult(request, reply, group.notifications)
    }
  )

  fastify.post(
    '/notifications',
    {
      schema: {
        operationId: 'postNotifications',
        summary: 'acknowledge a group, and/or notifications to the server',
        tags: ['messaging'],
        headers: MessageGroupHeaders,
        body: ClientNotificationsSchema,
        response: { 202: Accepted, ...errorResponses(404) }
      },
      // An acknowledgement alone has no body, whatever its Content-Type says: not an empty-JSON error,
      // and not a body that fails the array schema.
      onRequest: (request, _reply, done) => {
        if (hasNoBody(request)) delete request.headers['content-type']
        done()
      },
      preValidation: (request, _reply, done) => {
        if (request.body === undefined) request.body = NO_BODY
        done()
      }
    },
    async (request, reply) => {
      const owner = request.mcpState.principal.id
      const group = request.headers['mcp-message-group'] ?? request.headers['mcp-group-id']
      const body = request.body === NO_BODY ? undefined : request.body
      if (group === undefined && body === undefined) {
        throw errors.invalidRequest('POST /notifications takes an Mcp-Message-Group header to acknowledge, notifications in the body, or both')
      }
      if (group !== undefined) await mcp.messages.acknowledge(owner, group)
      if (body !== undefined) await mcp.messages.receive(owner, body)
      if (body !== undefined && body.length > 0) await createContext(request, reply)
      return sendEmpty(reply, 202)
    }
  )
}

// A marker for "no body": distinct from an empty array the client sent.
const NO_BODY: never[] = []

export function hasNoBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length']
  return (length === undefined || length === '0') && request.headers['transfer-encoding'] === undefined
}

export default notifications
