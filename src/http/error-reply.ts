import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { McpError, errors, wireErrorOf } from '../errors.js'
import { METHODS, REST_ROUTES, notOffered } from '../methods.js'

/**
 * Map anything thrown while serving an MCP route to the binding's error response: the JSON-RPC
 * `error` object with the right status. Fastify's own errors (schema validation, body parsing,
 * size limits) get their MCP codes; anything unknown is a 500 whose body says nothing more. The log
 * names each answer by its catalogue name (`mcpError`): at debug level, since a refusal is the
 * client's business, and an unknown failure at error level with what was thrown.
 */
export function toMcpError(err: unknown, request: FastifyRequest): McpError {
  const error = knownError(err, request)
  if (error === undefined) {
    request.log.error({ err, mcpError: 'MCP_ERR_INTERNAL' }, 'unhandled error')
    return errors.internal()
  }
  request.log.debug({ mcpError: error.name, status: error.status }, error.message)
  return error
}

function knownError(err: unknown, request: FastifyRequest): McpError | undefined {
  const wire = wireErrorOf(err)
  if (wire !== undefined) return wire
  const e = err as Partial<FastifyError> & { validation?: unknown; statusCode?: number }
  if (e.validation !== undefined) return unoffered(request) ?? errors.invalidParams(`Invalid request: ${e.message}`)
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
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return errors.http(e.statusCode, String(e.message))
  return undefined
}

/** A route of the method table whose capability the server does not offer: -32601 before its params are judged. */
function unoffered(request: FastifyRequest): McpError | undefined {
  const route = REST_ROUTES.get(request.routeOptions.schema?.operationId as string)
  return route === undefined ? undefined : notOffered(request.server.mcp, METHODS[route.name].capability)
}

export function sendError(reply: FastifyReply, error: McpError): FastifyReply {
  if (error.headers !== undefined) reply.headers(error.headers)
  return reply.code(error.status).type('application/json; charset=utf-8').send(JSON.stringify(error.toJSON()))
}
