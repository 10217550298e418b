import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { McpError, errors } from '../errors.js'
import { Header } from '../headers.js'
import { sendError, toMcpError } from './error-reply.js'

/**
 * The answers Fastify would otherwise shape itself, outside any MCP route, in the binding's error
 * shape with `Mcp-Protocol-Version` and `Mcp-Request-Id`: unknown paths outside the MCP prefix,
 * errors of root routes, and the 503 of requests that arrive while the server shuts down
 * (kept-alive connections; Fastify closes them after it).
 */
export function shapeRootErrors(app: FastifyInstance, version: string, notFound: boolean): void {
  // Admission (a child context) need not set the same two headers again: see rootEchoes.
  app.decorate(ECHOES, version)
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(Header.requestId, request.id)
    reply.header(Header.protocolVersion, version)
    if (!closing) return done()
    reply.header('connection', 'close')
    sendError(reply, errors.shuttingDown())
  })
  app.setErrorHandler((err, request, reply) => sendError(reply, toMcpError(err, request)))
  // Under a prefix the MCP plugin answers only its own paths; at the root its 404 covers all.
  if (notFound) app.setNotFoundHandler((request, reply) => sendError(reply, notFoundError(request)))
}

const ECHOES = 'mcpRootEchoes'

declare module 'fastify' {
  interface FastifyInstance {
    /** Set by {@link shapeRootErrors}: the version its onRequest hook sets on every response. */
    [ECHOES]?: string
  }
}

/**
 * Whether the root's onRequest hook (which runs first) already set `Mcp-Request-Id` to the request's
 * id and `Mcp-Protocol-Version` to `version` on every reply of `fastify`: two header calls a
 * request that admission then spares.
 */
export function rootEchoes(fastify: FastifyInstance, version: string): boolean {
  return fastify[ECHOES] === version
}

/** 404 -32601 naming the method and path (at most 256 characters of it). */
export function notFoundError(request: FastifyRequest): McpError {
  return errors.methodNotFound(`No MCP method at ${request.method} ${request.url.split('?')[0]!.slice(0, 256)}`)
}

/**
 * Fastify's `frameworkErrors`: the URL of a request that fails before routing (a malformed
 * percent-encoding, a path parameter over `maxParamLength`), answered in the binding's shape. The
 * path is not echoed: it may be thousands of characters, or carry what the client meant to hide.
 */
export function frameworkErrors(version: string): (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void {
  return (error, request, reply) => {
    reply.header(Header.requestId, request.id)
    reply.header(Header.protocolVersion, version)
    switch (error.code) {
      case 'FST_ERR_BAD_URL':
        return void sendError(reply, errors.invalidRequest('The URL is not validly percent-encoded UTF-8'))
      case 'FST_ERR_MAX_PARAM_LENGTH':
        return void sendError(reply, errors.uriTooLong())
      /* c8 ignore next 3 */
      default:
        request.log.error({ err: error }, 'framework error')
        return void sendError(reply, errors.internal())
    }
  }
}

// Credentials some clients put in query strings (RFC 6750 section 2.3 allows access_token there).
const SECRET_PARAMS = /([?&](?:access_token|refresh_token|id_token|client_secret)=)[^&#]*/gi

/** The request log's `req` without credential values in the query string. */
export function redactedRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: request.url.replace(SECRET_PARAMS, '$1[redacted]'),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}
