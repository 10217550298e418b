import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { withResourceMetadata } from '../auth/bearer.js'
import { sendError, toMcpError } from '../http/error-reply.js'
import { parseJsonBodies } from '../http/json-body.js'
import { notFoundError } from '../http/root-errors.js'

export interface ErrorShapeOptions {
  /** The `resource_metadata` URL that 401 and 403 challenges name (OAuth). */
  metadataUrl: string | undefined
}

/**
 * Every answer of the MCP routes in the binding's shape: JSON bodies only (415 otherwise), results
 * sent as the JSON text the routes built, every error the JSON-RPC `error` object with its status,
 * and unknown paths 404 -32601.
 */
const errorShape: FastifyPluginAsync<ErrorShapeOptions> = async (fastify, { metadataUrl }) => {
  // MCP bodies are JSON; anything else is 415, not a string that fails validation later.
  fastify.removeContentTypeParser('text/plain')
  // Strict UTF-8, bounded depth, no __proto__, finite numbers: before any route walks a body.
  parseJsonBodies(fastify)
  // Every route sends JSON text it built itself; nothing is stripped by a response schema.
  fastify.setSerializerCompiler(() => (data) => JSON.stringify(data))
  fastify.setErrorHandler((err, request, reply) => {
    const error = toMcpError(err, request)
    sendError(reply, metadataUrl === undefined ? error : withResourceMetadata(error, metadataUrl, request))
  })
  fastify.setNotFoundHandler((request, reply) => sendError(reply, notFoundError(request)))
}

export default fp(errorShape, { name: 'mcp-error-shape', fastify: '5.x' })
