import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from '@sinclair/typebox'
import { sendResult, sendWhenReady } from '../src/http/representation.js'
import { cancellableByClient, contextOf, paramsFromPost } from '../src/http/request.js'
import { streamResult, wantsStream } from '../src/http/sse-result.js'
import { CommonHeaders, errorResponses } from '../src/schema/http.js'
import { CallToolResponseSchema, type CallToolBody, type CallToolResponse } from '../src/schema/tools.js'
import { CreateTaskResultSchema, type CreateTaskResult } from '../src/schema/tasks.js'
import type { CallContext } from '../src/core/call-context.js'
import { listRoute } from '../src/http/list-route.js'
import { METHODS } from '../src/methods.js'
import { restRoute } from '../src/http/rest-route.js'

const callTool = restRoute('callTool')
const CALL = METHODS['tools/call']

/** tools/list and tools/call. */
const tools: FastifyPluginAsyncTypebox = async (fastify) => {
  listRoute(fastify, 'tools/list')

  fastify.route({
    method: callTool.method,
    url: callTool.url,
    schema: {
      operationId: callTool.operationId,
      summary: 'tools/call',
      description:
        'Call any tool by name. Each tool also has its own typed operation at /tools/{its name}/calls. With `Accept: text/event-stream` the answer is a stream: `notification` events (progress, log messages), then one `result` (or `error`) event.',
      tags: ['tools'],
      params: Type.Object(CALL.target),
      headers: CommonHeaders,
      body: CALL.body,
      response: { 200: CallToolResponseSchema, 202: CreateTaskResultSchema, ...errorResponses(404, 409, 413) }
    },
    // Not an async handler: a call answered at once is sent in this turn, with no promise (see MaybePromise).
    handler: (request, reply) => {
      // A stream holds its slot from before the call starts: a refusal (429) leaves nothing begun.
      if (wantsStream(request)) fastify.mcpStreams.take(request, reply)
      const body = paramsFromPost(request, request.body)
      // A promise only in the legacy era: a 2026-07-28 call does not wait a turn for its context.
      const made = contextOf(request, reply, body)
      if (made instanceof Promise) return callLater(request.params.name, body, made, reply)
      return call(request.params.name, body, made, reply)
    }
  })
}

/** Run the call and send its answer (200 with the result, or 202 with the task it became): now (undefined), or by the promise. */
function call(name: string, body: CallToolBody, made: CallContext, reply: FastifyReply): Promise<void> | undefined {
  const request = reply.request
  const ctx = cancellableByClient(made, reply)
  const mcp = request.server.mcp
  // The body becomes the method's params in place, the path's name added: a copy (`{ ...body, name }`)
  // cost ~5% of the server's CPU per call (profiles, 2026-11-28). Nothing reads the body as sent after
  // this; the idempotency digest was taken in preHandler.
  const params = body as CallToolBody & { name: string }
  params.name = name
  if (wantsStream(request)) return streamResult(request, reply, ctx, (c) => CALL.core(mcp, params, c))
  return sendWhenReady(reply, CALL.core(mcp, params, ctx), answer)
}

/** Legacy era: the call once its context is read; ends with the reply, as sendWhenReady's promise does. */
async function callLater(name: string, body: CallToolBody, made: Promise<CallContext>, reply: FastifyReply): Promise<void> {
  await call(name, body, await made, reply)
  return reply
}

function answer(reply: FastifyReply, result: CallToolResponse | CreateTaskResult): FastifyReply {
  if ('taskId' in result) {
    // The task is stored before this answer: GET Location works at once, on any instance.
    reply.code(202)
    reply.header('location', `${reply.server.mcpPrefix}/tasks/${encodeURIComponent(result.taskId)}`)
    reply.header('retry-after', String(Math.max(1, Math.ceil(result.pollIntervalMs / 1000))))
  }
  return sendResult(reply.request, reply, result)
}

export default tools
