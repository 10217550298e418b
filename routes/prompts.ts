import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { errors } from '../src/errors.js'
import { Header, decodeJsonHeader } from '../src/headers.js'
import { sendResult } from '../src/http/representation.js'
import { cancellableByClient, createContext, paramsFromHeaders, paramsFromPost } from '../src/http/request.js'
import { CommonHeaders, RetryGetHeaders, errorResponses } from '../src/schema/http.js'
import { GetPromptResponseSchema, type GetPromptBody } from '../src/schema/prompts.js'
import { copyOf } from '../src/core/results.js'
import { listRoute } from '../src/http/list-route.js'
import { restAt, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const getPromptRoute = restRoute('getPrompt')
const getPromptWithBodyRoute = restRoute('getPromptWithBody')

const GET = METHODS['prompts/get']
const NameParams = Type.Object(GET.target)

/** prompts/list and prompts/get (GET with headers, or POST with a body when headers would be too large). */
const prompts: FastifyPluginAsyncTypebox = async (fastify) => {
  const mcp = fastify.mcp

  listRoute(fastify, 'prompts/list')

  const get = async (request: FastifyRequest, reply: FastifyReply, name: string, params: GetPromptBody) => {
    const ctx = cancellableByClient(await createContext(request, reply, params), reply)
    return sendResult(request, reply, await GET.core(mcp, { ...params, name }, restAt(ctx.era, ctx)))
  }

  fastify.route({
    method: getPromptRoute.method,
    url: getPromptRoute.url,
    schema: {
      operationId: getPromptRoute.operationId,
      summary: 'prompts/get',
      description: 'Arguments travel in `Mcp-Arguments` (a JSON object of strings).',
      tags: ['prompts'],
      params: NameParams,
      headers: Type.Object({
        ...RetryGetHeaders.properties,
        'mcp-arguments': Type.Optional(Type.String({ description: 'Prompt arguments as a JSON object of strings (or the base64 form).' }))
      }),
      response: { 200: GetPromptResponseSchema, ...errorResponses(404) }
    },
    handler: async (request, reply) => {
      const params: GetPromptBody = paramsFromHeaders(request)
      const args = argumentsFromHeader(request)
      if (args !== undefined) params.arguments = args
      return get(request, reply, request.params.name, params)
    }
  })

  fastify.route({
    method: getPromptWithBodyRoute.method,
    url: getPromptWithBodyRoute.url,
    schema: {
      operationId: getPromptWithBodyRoute.operationId,
      summary: 'prompts/get (parameters in the body)',
      description: 'The same as GET, for arguments too large for a header.',
      tags: ['prompts'],
      params: NameParams,
      headers: CommonHeaders,
      body: GET.body,
      response: { 200: GetPromptResponseSchema, ...errorResponses(404, 413) }
    },
    handler: async (request, reply) => {
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
  })
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
