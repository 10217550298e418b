import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { type ListRequest, sendResult, serveCached } from '../src/http/representation.js'
import { cancellableByClient, contextOf, paramsFromPost } from '../src/http/request.js'
import { streamResult, wantsStream } from '../src/http/sse-result.js'
import { CommonHeaders, CursorQuery, GetHeaders, NotModified, errorResponses } from '../src/schema/http.js'
import { CallToolBodySchema, CallToolResponseSchema, ListToolsResultSchema } from '../src/schema/tools.js'
import { CreateTaskResultSchema } from '../src/schema/tasks.js'

/** tools/list and tools/call. */
const tools: FastifyPluginAsyncTypebox = async (fastify) => {
  const mcp = fastify.mcp

  fastify.get(
    '',
    {
      schema: {
        operationId: 'listTools',
        summary: 'tools/list',
        tags: ['tools'],
        querystring: CursorQuery,
        headers: GetHeaders,
        response: { 200: ListToolsResultSchema, 304: NotModified, ...errorResponses() }
      }
    },
    serveCached(mcp.cacheHints, (request: ListRequest, era) => mcp.list('tools', request.query.cursor, era))
  )

  fastify.post(
    '/:name/calls',
    {
      schema: {
        operationId: 'callTool',
        summary: 'tools/call',
        description:
          'Call any tool by name. Each tool also has its own typed operation at /tools/{its name}/calls. With `Accept: text/event-stream` the answer is a stream: `notification` events (progress, log messages), then one `result` (or `error`) event.',
        tags: ['tools'],
        params: Type.Object({ name: Type.String({ minLength: 1, maxLength: 128 }) }),
        headers: CommonHeaders,
        body: CallToolBodySchema,
        response: { 200: CallToolResponseSchema, 202: CreateTaskResultSchema, ...errorResponses(404, 413) }
      }
    },
    async (request, reply) => {
      const body = paramsFromPost(request, request.body)
      // A promise only in the legacy era: a 2026-07-28 call does not wait a turn for its context.
      const made = contextOf(request, reply, body)
      const ctx = cancellableByClient(made instanceof Promise ? await made : made, reply)
      if (wantsStream(request)) return streamResult(request, reply, ctx, (c) => mcp.callTool(request.params.name, body, c))
      const result = await mcp.callTool(request.params.name, body, ctx)
      if ('taskId' in result) {
        // The task is stored before this answer: GET Location works at once, on any instance.
        reply.code(202)
        reply.header('location', `${fastify.mcpPrefix}/tasks/${encodeURIComponent(result.taskId)}`)
        reply.header('retry-after', String(Math.max(1, Math.ceil(result.pollIntervalMs / 1000))))
      }
      return sendResult(request, reply, result)
    }
  )
}

export default tools
