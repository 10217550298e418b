import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { errors } from '../src/errors.js'
import { Header, decodeJsonHeader } from '../src/headers.js'
import { type ListRequest, sendResult, serveCached } from '../src/http/representation.js'
import { cancellableByClient, createContext, paramsFromHeaders, paramsFromPost } from '../src/http/request.js'
import { CommonHeaders, CursorQuery, GetHeaders, NotModified, RetryGetHeaders, errorResponses } from '../src/schema/http.js'
import { GetPromptBodySchema, GetPromptResponseSchema, ListPromptsResultSchema, type GetPromptBody } from '../src/schema/prompts.js'
import { copyOf } from '../src/core/results.js'

const NameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 128 }) })

/** prompts/list and prompts/get (GET with headers, or POST with a body when headers would be too large). */
const prompts: FastifyPluginAsyncTypebox = async (fastify) => {
  const mcp = fastify.mcp

  fastify.get(
    '',
    {
      schema: {
        operationId: 'listPrompts',
        summary: 'prompts/list',
        tags: ['prompts'],
        querystring: CursorQuery,
        headers: GetHeaders,
        response: { 200: ListPromptsResultSchema, 304: NotModified, ...errorResponses() }
      }
    },
    serveCached(mcp.cacheHints, (request: ListRequest, era) => mcp.list('prompts', request.query.cursor, era))
  )

  const get = async (request: FastifyRequest, reply: FastifyReply, name: string, params: GetPromptBody) => {
    const ctx = cancellableByClient(await createContext(request, reply, params), reply)
    return sendResult(request, reply, await mcp.getPrompt(name, params, ctx))
  }

  fastify.get(
    '/:name',
    {
      schema: {
        operationId: 'getPrompt',
        summary: 'prompts/get',
        description: 'Arguments travel in `Mcp-Arguments` (a JSON object of strings).',
        tags: ['prompts'],
        params: NameParams,
        headers: Type.Object({
          ...RetryGetHeaders.properties,
          'mcp-arguments': Type.Optional(Type.String({ description: 'Prompt arguments as a JSON object of strings (or the base64 form).' }))
        }),
        response: { 200: GetPromptResponseSchema, ...errorResponses(404) }
      }
    },
    async (request, reply) => {
      const params: GetPromptBody = paramsFromHeaders(request)
      const args = argumentsFromHeader(request)
      if (args !== undefined) params.arguments = args
      return get(request, reply, request.params.name, params)
    }
  )

  fastify.post(
    '/:name',
    {
      schema: {
        operationId: 'getPromptWithBody',
        summary: 'prompts/get (parameters in the body)',
        description: 'The same as GET, for arguments too large for a header.',
        tags: ['prompts'],
        params: NameParams,
        headers: CommonHeaders,
        body: GetPromptBodySchema,
        response: { 200: GetPromptResponseSchema, ...errorResponses(404, 413) }
      }
    },
    async (request, reply) => {
      const body = paramsFromPost(request, request.body)
      const args = argumentsFromHeader(request)
      if (args === undefined) return get(request, reply, request.params.name, body)
      if (body.arguments !== undefined) {
        throw errors.invalidParams('Send the arguments in the body or in the Mcp-Arguments header, not both')
      }
      const withArgs = copyOf(body)
      withArgs.arguments = args
      return get(request, reply, request.params.name, withArgs)
    }
  )
}

/** `Mcp-Arguments`: a JSON object of strings, plain or base64; anything else is 400 naming the header. */
function argumentsFromHeader(request: FastifyRequest): Record<string, string> | undefined {
  const args = decodeJsonHeader(Header.arguments, request.headers[Header.arguments], 'object') as Record<string, unknown> | undefined
  for (const [k, v] of Object.entries(args ?? {})) {
    if (typeof v !== 'string') throw errors.invalidParams(`Invalid Mcp-Arguments header: argument "${k}" must be a string`)
  }
  return args as Record<string, string> | undefined
}

export default prompts
