import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import type { ServedTask } from '../src/tasks/task-methods.js'
import { Type } from '@sinclair/typebox'
import { sendRepresentation, sendResult, sendWhenReady } from '../src/http/representation.js'
import { contextOf, createContext, paramsFromHeaders, paramsFromPost } from '../src/http/request.js'
import { CommonHeaders, GetHeaders, NotModified, errorResponses } from '../src/schema/http.js'
import { AckSchema, CancelTaskBodySchema, DetailedTaskSchema, UpdateTaskBodySchema } from '../src/schema/tasks.js'
import { TERMINAL } from '../src/store/types.js'
import { hasNoBody } from './notifications.js'

const TaskParams = Type.Object({ taskId: Type.String({ minLength: 1, maxLength: 128 }) })

/**
 * The Tasks extension over HTTP: tasks/get (ETag for cheap polling), tasks/update (answers to the
 * task's inputRequests) and tasks/cancel (cooperative); the logic is mcp.tasks (src/tasks/task-methods.ts), shared
 * with /mcp. A task belongs to its creator: anyone else's, like an unknown or expired one, is 404.
 */
const tasks: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get(
    '/tasks/:taskId',
    {
      schema: {
        operationId: 'getTask',
        summary: 'tasks/get',
        tags: ['tasks'],
        params: TaskParams,
        headers: GetHeaders,
        response: { 200: DetailedTaskSchema, 304: NotModified, ...errorResponses(404) }
      }
    },
    // Not an async handler: a poll the store answers at once (memory) is sent in this turn.
    (request, reply) => {
      // The context settles the version from Mcp-Meta, as settleGet would: the header is decoded once.
      const made = contextOf(request, reply, paramsFromHeaders(request))
      const { taskId } = request.params
      const task = made instanceof Promise ? made.then((ctx) => fastify.mcp.tasks.served(ctx, taskId)) : fastify.mcp.tasks.served(made, taskId)
      return sendWhenReady(reply, task, sendTask)
    }
  )

  fastify.post(
    '/tasks/:taskId/update',
    {
      schema: {
        operationId: 'updateTask',
        summary: 'tasks/update',
        description: 'Answers to outstanding inputRequests; other keys are ignored; a partial answer leaves the task input_required.',
        tags: ['tasks'],
        params: TaskParams,
        headers: CommonHeaders,
        body: UpdateTaskBodySchema,
        response: { 200: AckSchema, ...errorResponses(404, 413) }
      }
    },
    async (request, reply) => {
      await fastify.mcp.tasks.update(await createContext(request, reply, paramsFromPost(request, request.body)), request.params.taskId, request.body.inputResponses)
      return sendResult(request, reply, { resultType: 'complete' })
    }
  )

  fastify.post(
    '/tasks/:taskId/cancel',
    {
      schema: {
        operationId: 'cancelTask',
        summary: 'tasks/cancel',
        description: 'Cooperative: the handler sees its signal abort; a task already finished stays as it is.',
        tags: ['tasks'],
        params: TaskParams,
        headers: CommonHeaders,
        body: CancelTaskBodySchema,
        response: { 200: AckSchema, ...errorResponses(404) }
      },
      // The body is optional: a bare POST cancels, whatever its Content-Type says.
      onRequest: (request, _reply, done) => {
        if (hasNoBody(request)) delete request.headers['content-type']
        done()
      },
      preValidation: (request, _reply, done) => {
        request.body ??= {}
        done()
      }
    },
    async (request, reply) => {
      await fastify.mcp.tasks.cancel(await createContext(request, reply, paramsFromPost(request, request.body)), request.params.taskId)
      return sendResult(request, reply, { resultType: 'complete' })
    }
  )
}

/** tasks/get's answer: the task with its ETag, and Retry-After (its poll interval) while it runs. */
function sendTask(reply: FastifyReply, task: ServedTask): FastifyReply {
  if (!TERMINAL.has(task.status)) reply.header('retry-after', String(Math.max(1, Math.ceil(task.pollIntervalMs / 1000))))
  return sendRepresentation(reply.request, reply, task.representation, { ttlMs: 0, cacheScope: 'private' })
}

export default tasks
