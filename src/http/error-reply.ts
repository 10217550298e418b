import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ErrorCode, McpError, errors, wireErrorOf } from '../errors.js'

/**
 * Map anything thrown while serving an MCP route to the binding's error response: the JSON-RPC
 * `error` object with the right status. Fastify's own errors (schema validation, body parsing,
 * size limits) get their MCP codes; anything unknown is a 500 whose body says nothing more.
 */
export function toMcpError(err: unknown, request: FastifyRequest): McpError {
  const wire = wireErrorOf(err)
  if (wire !== undefined) return wire
  const e = err as Partial<FastifyError> & { validation?: unknown; statusCode?: number }
  if (e.validation !== undefined) return errors.invalidParams(`Invalid request: ${e.message}`)
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.parse()
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidRequest('The body must not be empty when Content-Type is application/json')
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge()
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType()
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.invalidRequest('Content-Length does not match the body')
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new McpError(ErrorCode.invalidRequest, String(e.message), e.statusCode)
  }
  request.log.error({ err }, 'unhandled error')
  return errors.internal()
}

export function sendError(reply: FastifyReply, error: McpError): FastifyReply {
  if (error.headers !== undefined) reply.headers(error.headers)
  return reply.code(error.status).type('application/json; charset=utf-8').send(JSON.stringify(error.toJSON()))
}
