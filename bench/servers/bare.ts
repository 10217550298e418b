import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { createHash, randomBytes } from 'node:crypto'
import { StateSealer, digestArguments } from '../../src/mrtr/seal.js'
import { redisCeiling } from './redis-ceiling.js'
import { benchNotification, benchTools, connectionCount, connectionId, fillerAnswer, notificationCount, port, toolCount } from '../catalogue.js'

/**
 * The ceiling: bare Fastify doing the JSON work of each workload and nothing else. It validates
 * the body with a route schema (as any Fastify app would), answers the same JSON bytes, and for
 * the multi round-trip flow seals and opens the same JWE with the same sealer, so the crypto cost
 * is in the ceiling too.
 */
const tools = benchTools(toolCount())
const app = Fastify({ logger: false, forceCloseConnections: true })

// The headers every answer of ours carries (the binding's request id and protocol version, and
// CORS's Vary), set the cheapest way a Fastify app can: in the handler, one call.
const PREFIX = randomBytes(9).toString('base64url')
let requestCount = 0
const VARY_REPRESENTATION = 'Origin, Mcp-Protocol-Version, Mcp-Meta, Authorization'
function mcpHeaders(reply: FastifyReply, vary = 'Origin'): FastifyReply {
  return reply.headers({ 'mcp-request-id': `${PREFIX}.${++requestCount}`, 'mcp-protocol-version': '2026-07-28', vary })
}

/** A task as ours answers a poll: a representation with its ETag, revalidated by If-None-Match. */
function sendTask(request: FastifyRequest, reply: FastifyReply, task: Record<string, unknown>): FastifyReply {
  const body = JSON.stringify({ resultType: 'complete', ...task })
  const etag = `"${createHash('sha1').update(body).digest('base64url')}"`
  mcpHeaders(reply, VARY_REPRESENTATION).headers({ etag, 'cache-control': 'private, max-age=0' })
  if (request.headers['if-none-match'] === etag) return reply.code(304).send()
  return reply.type('application/json; charset=utf-8').send(body)
}

// The catalogue and the task tool of the task workloads, as ours lists them (one page).
const benchTask = { name: 'bench_task', title: 'Bench task', inputSchema: { type: 'object', properties: {} }, execution: { taskSupport: 'optional' } }
const listBody = JSON.stringify({
  tools: [...tools.map(({ name, title, description, input, annotations }) => ({ name, title, description, inputSchema: input, annotations })), benchTask],
  resultType: 'complete',
  ttlMs: 0,
  cacheScope: 'private'
})
const listEtag = `"${createHash('sha1').update(listBody).digest('base64url')}"`
// Sent as its bytes, as the library sends a cached list: not encoded again per request.
const listBytes = Buffer.from(listBody)

app.get('/tools', (request, reply) => {
  mcpHeaders(reply, VARY_REPRESENTATION).headers({ etag: listEtag, 'cache-control': 'private, max-age=0' })
  if (request.headers['if-none-match'] === listEtag) return reply.code(304).send()
  return reply.type('application/json; charset=utf-8').send(listBytes)
})

const names = new Set(tools.map((t) => t.name))
app.post<{ Params: { name: string }; Body: { arguments: Record<string, string> } }>(
  '/tools/:name/calls',
  {
    schema: {
      body: {
        type: 'object',
        required: ['arguments'],
        properties: { arguments: { type: 'object', properties: { text: { type: 'string', maxLength: 100_000 } } } }
      }
    }
  },
  async (request, reply) => {
    const { name } = request.params
    mcpHeaders(reply)
    if (!names.has(name)) return reply.code(404).send({ code: -32602, message: `Unknown tool: ${name}` })
    const text = name === 'echo' ? String(request.body.arguments.text) : fillerAnswer(name, String(request.body.arguments.query))
    return { content: [{ type: 'text', text }], resultType: 'complete' }
  }
)

// The demo's add: a tool that returns an object (structured output, and its text as the spec asks).
// The ceiling validates the input and builds the same answer; it does not check the output.
app.post<{ Body: { arguments: { a: number; b: number } } }>(
  '/tools/add/calls',
  {
    schema: {
      body: {
        type: 'object',
        required: ['arguments'],
        properties: { arguments: { type: 'object', required: ['a', 'b'], properties: { a: { type: 'number' }, b: { type: 'number' } } } }
      }
    }
  },
  async (request, reply) => {
    mcpHeaders(reply)
    const structuredContent = { sum: request.body.arguments.a + request.body.arguments.b }
    return { structuredContent, content: [{ type: 'text', text: JSON.stringify(structuredContent) }], resultType: 'complete' }
  }
)

// update_work_item's first two rounds, as the demo asks them.
const sealer = new StateSealer(process.env.MCP_STATE_KEYS === undefined ? undefined : StateSealer.parseKeys(process.env.MCP_STATE_KEYS))
const RESOLUTIONS = ['Fixed', "Won't Fix", 'Duplicate', 'By Design']
const MISSING_TASKS = { code: -32021, message: 'Declare the io.modelcontextprotocol/tasks extension' }
const silent = { debug() {}, info() {}, warn() {}, error() {} }
interface WorkItemBody {
  arguments: { workItemId: number; fields: Record<string, string> }
  requestState?: string
  inputResponses?: { resolution?: { action: string; content?: { resolution?: string } } }
}
app.post<{ Body: WorkItemBody }>(
  '/tools/update_work_item/calls',
  {
    schema: {
      body: {
        type: 'object',
        required: ['arguments'],
        properties: {
          arguments: {
            type: 'object',
            required: ['workItemId', 'fields'],
            properties: { workItemId: { type: 'integer', minimum: 1 }, fields: { type: 'object', additionalProperties: { type: 'string' } } }
          },
          requestState: { type: 'string' },
          inputResponses: { type: 'object' }
        }
      }
    }
  },
  async (request, reply) => {
    mcpHeaders(reply)
    const { workItemId, fields } = request.body.arguments
    const binding = { principal: 'anonymous', method: 'tools/call', target: 'update_work_item', args: digestArguments(request.body.arguments) }
    if (request.body.requestState !== undefined) {
      sealer.open(request.body.requestState, binding, silent)
      const resolution = request.body.inputResponses?.resolution?.content?.resolution
      if (resolution === undefined || !RESOLUTIONS.includes(resolution)) return reply.code(400).send({ code: -32602, message: 'bad answer' })
      return { content: [{ type: 'text', text: `Bug #${workItemId} resolved as ${resolution}. State set to ${fields['System.State']}.` }], resultType: 'complete' }
    }
    // The question goes into the state too, as the library seals it to check the answer later.
    const question = {
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: `Resolving Bug #${workItemId} requires a resolution. How was this bug resolved?`,
        requestedSchema: {
          type: 'object',
          required: ['resolution'],
          properties: { resolution: { type: 'string', enum: RESOLUTIONS, description: 'Resolution type for this bug' } }
        }
      }
    }
    return {
      resultType: 'input_required',
      inputRequests: { resolution: question },
      requestState: sealer.seal(binding, { q: { resolution: question } })
    }
  }
)

// GET /notifications: the first group of queued notifications (100 at most), the same until
// acknowledged, serialized per request as the library does; [] when nothing waits.
const queued = Array.from({ length: notificationCount() }, (_, i) => benchNotification(i))
const group = queued.slice(0, 100)
// With CONNECTIONS, each connection (the query parameter `c`) has its own group of one, kept in a Map.
const groups = new Map<string, { id: string; notifications: unknown[] }>()
for (let c = 0; c < connectionCount(); c++) groups.set(connectionId(String(c)), { id: `g-${c}`, notifications: [benchNotification(c)] })

// Tasks: 202 with a task kept in a Map, done at once; GET /tasks/:id reads it back. No TTL sweep:
// the ceiling of the bookkeeping, not a task store.
const tasks = new Map<string, Record<string, unknown>>()
let taskCount = 0

// With MCP_REDIS_URL (the Redis phases), notifications and tasks live in Redis instead: see redis-ceiling.ts.
const redis = process.env.MCP_REDIS_URL === undefined ? undefined : await redisCeiling(process.env.MCP_REDIS_URL, queued)

if (redis !== undefined) {
  app.get('/notifications', async (_request, reply) => {
    mcpHeaders(reply)
    const taken = await redis.take()
    if (taken !== undefined) reply.header('mcp-message-group', taken.id)
    return reply.type('application/json; charset=utf-8').send(taken?.json ?? '[]')
  })
  app.post<{ Body: { task?: { ttl?: number } } }>('/tools/bench_task/calls', async (request, reply) => {
    const now = new Date().toISOString()
    const task = { taskId: `t-${process.pid}-${++taskCount}`, status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: request.body.task?.ttl ?? 3_600_000, pollIntervalMs: 1000 }
    mcpHeaders(reply)
    if (!(await redis.createTask(task))) return reply.code(429).send({ code: -32603, message: 'Too many tasks' })
    // The work finishes after the answer, as the library's background task does.
    void redis.completeTask(task.taskId, { status: 'completed', lastUpdatedAt: now, result: { content: [{ type: 'text', text: 'done' }] } })
    return reply.code(202).headers({ location: `/tasks/${task.taskId}`, 'retry-after': '1' }).send({ resultType: 'task', ...task })
  })
  app.get<{ Params: { id: string } }>('/tasks/:id', async (request, reply) => {
    if (!declaresTasks(request.headers['mcp-meta'])) return mcpHeaders(reply).code(400).send(MISSING_TASKS)
    const task = await redis.getTask(request.params.id)
    return task === undefined ? mcpHeaders(reply).code(404).send({ code: -32602, message: 'Unknown task' }) : sendTask(request, reply, task)
  })
} else {
  app.get<{ Querystring: { c?: string } }>('/notifications', (request, reply) => {
    mcpHeaders(reply)
    const c = request.query.c
    const mine = c === undefined ? { id: 'g-1', notifications: group } : (groups.get(connectionId(c)) ?? { id: '', notifications: [] })
    if (mine.notifications.length > 0) reply.header('mcp-message-group', mine.id)
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(mine.notifications))
  })
  app.post<{ Body: { task?: { ttl?: number } } }>('/tools/bench_task/calls', (request, reply) => {
    const now = new Date().toISOString()
    mcpHeaders(reply)
    const taskId = `t-${++taskCount}`
    const task = { taskId, status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: request.body.task?.ttl ?? 3_600_000, pollIntervalMs: 1000 }
    tasks.set(taskId, { ...task, status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } })
    if (tasks.size > 10_000) tasks.delete(tasks.keys().next().value!)
    return reply.code(202).headers({ location: `/tasks/${task.taskId}`, 'retry-after': '1' }).send({ resultType: 'task', ...task })
  })
  app.get<{ Params: { id: string } }>('/tasks/:id', (request, reply) => {
    if (!declaresTasks(request.headers['mcp-meta'])) return mcpHeaders(reply).code(400).send(MISSING_TASKS)
    const task = tasks.get(request.params.id)
    return task === undefined ? mcpHeaders(reply).code(404).send({ code: -32602, message: 'Unknown task' }) : sendTask(request, reply, task)
  })
}

/** tasks/get must come from a client that declares the Tasks extension (in Mcp-Meta), as ours checks. */
function declaresTasks(header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false
  try {
    return JSON.parse(header)?.['io.modelcontextprotocol/clientCapabilities']?.extensions?.['io.modelcontextprotocol/tasks'] !== undefined
  } catch {
    return false
  }
}

await app.listen({ host: '127.0.0.1', port: port() })
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
