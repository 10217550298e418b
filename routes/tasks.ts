import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import type { ServedTask } from '../src/tasks/task-methods.js'
import { Type } from '@sinclair/typebox'
import { sendRepresentation, sendResult, sendWhenReady } from '../src/http/representation.js'
import { contextOf, createContext, paramsFromHeaders, paramsFromPost } from '../src/http/request.js'
import { CommonHeaders, GetHeaders, NotModified, errorResponses } from '../src/schema/http.js'
import { TERMINAL } from '../src/store/types.js'
import { hasNoBody } from './notifications.js'
import { restAt, restRoute } from '../src/http/rest-route.js'
import { METHODS } from '../src/methods.js'

const getTaskRoute = restRoute('getTask')
const updateTaskRoute = restRoute('updateTask')
const cancelTaskRoute = restRoute('cancelTask')

const GET = METHODS['tasks/get']
const UPDATE = METHODS['tasks/update']
const CANCEL = METHODS['tasks/cancel']
const TaskParams = Type.Object(GET.target)

/**
 * The Tasks extension over HTTP: tasks/get (ETag for cheap polling), tasks/update (answers to the
 * task's inputRequests) and tasks/cancel (cooperative); the logic is mcp.tasks (src/tasks/task-methods.ts), shared
 * with /mcp. A task belongs to its creator: anyone else's, like an unknown or expired one, is 404.
 */
const tasks: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.route({
    method: getTaskRoute.method,
    url: getTaskRoute.url,
    schema: {
      operationId: getTaskRoute.operationId,
      summary: 'tasks/get',
      tags: ['tasks'],
      params: TaskParams,
      headers: GetHeaders,
      response: { 200: GET.result, 304: NotModified, ...errorResponses(404) }
    },
    // Not an async handler: a poll the store answers at once (memory) is sent in this turn.
    handler: (request, reply) => {
      // The context settles the version from Mcp-Meta, as settleGet would: the header is decoded once.
      const made = contextOf(request, reply, paramsFromHeaders(request))
      return sendWhenReady(reply, GET.core(fastify.mcp, request.params, made instanceof Promise ? restAt(request.mcpState.era, made) : made), sendTask)
    }
  })

  fastify.route({
    method: updateTaskRoute.method,
    url: updateTaskRoute.url,
    schema: {
      operationId: updateTaskRoute.operationId,
      summary: 'tasks/update',
      description: 'Answers to outstanding inputRequests; other keys are ignored; a partial answer leaves the task input_required.',
      tags: ['tasks'],
      params: TaskParams,
      headers: CommonHeaders,
      body: UPDATE.body,
      response: { 200: UPDATE.result, ...errorResponses(404, 413) }
    },
    handler: async (request, reply) => {
      const ctx = createContext(request, reply, paramsFromPost(request, request.body))
      return sendResult(request, reply, await UPDATE.core(fastify.mcp, { ...request.body, ...request.params }, restAt(request.mcpState.era, ctx)))
    }
  })

  fastify.route({
    method: cancelTaskRoute.method,
    url: cancelTaskRoute.url,
    schema: {
      operationId: cancelTaskRoute.operationId,
      summary: 'tasks/cancel',
      description: 'Cooperative: the handler sees its signal abort; a task already finished stays as it is.',
      tags: ['tasks'],
      params: TaskParams,
      headers: CommonHeaders,
      body: CANCEL.body,
      response: { 200: CANCEL.result, ...errorResponses(404) }
    },
    // The body is optional: a bare POST cancels, whatever its Content-Type says.
    onRequest: (request, _reply, done) => {
      if (hasNoBody(request)) delete request.headers['content-type']
      done()
    },
    preValidation: (request, _reply, done) => {
      request.body ??= {}
      done()
    },
    handler: async (request, reply) => {
      const ctx = createContext(request, reply, paramsFromPost(request, request.body))
      return sendResult(request, reply, await CANCEL.core(fastify.mcp, { ...request.body, ...request.params }, restAt(request.mcpState.era, ctx)))
    }
  })
}

/** tasks/get's answer: the task with its ETag, and Retry-After (its poll interval) while it runs. */
function sendTask(reply: FastifyReply, task: ServedTask): FastifyReply {
  if (!TERMINAL.has(task.status)) reply.header('retry-after', String(Math.max(1, Math.ceil(task.pollIntervalMs / 1000))))
  return sendRepresentation(reply.request, reply, task.representation, { ttlMs: 0, cacheScope: 'private' })
}

export default tasks
