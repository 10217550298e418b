import type { FastifyRequest } from 'fastify'
import { decodeJsonHeader, Header, isPlainObject } from '../headers.js'

/*
 * Which MCP operation an HTTP request is: the Pure HTTP route names it (its method and target are
 * in the path), `/mcp` says it in the JSON-RPC body. Binding-only routes get custom method names
 * (the conventions allow them), listed in docs/observability.md.
 */

/** The MCP method of each Pure HTTP route, by `METHOD url` under the plugin's prefix. */
const ROUTES = new Map<string, string>([
  ['POST /initialize', 'initialize'],
  ['GET /discover', 'server/discover'],
  ['GET /ping', 'ping'],
  ['POST /logLevel', 'logging/setLevel'],
  ['POST /completions', 'completion/complete'],
  ['GET /tools', 'tools/list'],
  ['POST /tools/:name/calls', 'tools/call'],
  ['GET /prompts', 'prompts/list'],
  ['GET /prompts/:name', 'prompts/get'],
  ['POST /prompts/:name', 'prompts/get'],
  ['GET /resources', 'resources/list'],
  ['GET /resources/templates', 'resources/templates/list'],
  ['GET /resources/:uri', 'resources/read'],
  ['POST /resources/:uri', 'resources/read'],
  ['POST /resources/subscribe', 'resources/subscribe'],
  ['POST /resources/unsubscribe', 'resources/unsubscribe'],
  ['GET /notifications', 'notifications/poll'],
  ['POST /notifications', 'notifications/acknowledge'],
  ['POST /requests', 'requests/poll'],
  ['POST /responses', 'requests/answer'],
  ['GET /tasks/:taskId', 'tasks/get'],
  ['POST /tasks/:taskId/update', 'tasks/update'],
  ['POST /tasks/:taskId/cancel', 'tasks/cancel']
])

/** What the span and the metric say about one MCP request or notification. */
export interface Operation {
  method: string
  /** The tool or prompt: the span's name is `{method} {target}`. */
  target?: string
  tool?: string
  prompt?: string
  uri?: string
  taskId?: string
  /** The JSON-RPC id (on `/mcp`), or the client's `Mcp-Request-Id` (Pure HTTP). */
  requestId?: string
  /** Where the caller's trace context may be (`params._meta`). */
  meta?: Record<string, unknown>
}

/**
 * The MCP method of each HTTP method of a route (its full `url`, under the plugin's `prefix`), or
 * undefined for a route that is not one (webhooks, the document). Worked out once, when the route
 * is registered.
 */
export function routeMethods(url: string, methods: string | string[], prefix: string): Record<string, string> | undefined {
  if (!url.startsWith(prefix)) return undefined
  const path = url.slice(prefix.length)
  let found: Record<string, string> | undefined
  for (const m of Array.isArray(methods) ? methods : [methods]) {
    const method = ROUTES.get(`${m.toUpperCase()} ${path}`)
    if (method !== undefined) (found ??= Object.create(null) as Record<string, string>)[m.toUpperCase()] = method
  }
  return found
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

/** The operation of a Pure HTTP request, once its body is parsed; `traced`: with its `_meta` (a span's parent). */
export function pureHttpOperation(request: FastifyRequest, method: string, traced = true): Operation {
  const params = request.params as Record<string, unknown>
  const body = isPlainObject(request.body) ? request.body : undefined
  const op: Operation = { method }
  if (method === 'tools/call') op.target = op.tool = str(params.name)
  else if (method === 'prompts/get') op.target = op.prompt = str(params.name)
  else if (method === 'resources/read') op.uri = str(params.uri)
  else if (method === 'resources/subscribe' || method === 'resources/unsubscribe') op.uri = str(body?.uri)
  else if (method.startsWith('tasks/')) op.taskId = str(params.taskId)
  const requestId = request.headers[Header.requestId]
  if (typeof requestId === 'string') op.requestId = requestId
  if (traced) op.meta = isPlainObject(body?._meta) ? body._meta : headerMeta(request)
  return op
}

/** The operation of a JSON-RPC message on `/mcp`, or undefined when the body is not one. */
export function jsonRpcOperation(body: unknown): Operation | undefined {
  if (!isPlainObject(body)) return undefined
  const id = typeof body.id === 'string' || typeof body.id === 'number' ? String(body.id) : undefined
  // A client's answer to a server-to-client request: the Pure HTTP face's POST /responses.
  if (body.method === undefined) return id === undefined ? undefined : { method: 'requests/answer', requestId: id }
  if (typeof body.method !== 'string' || body.method === '') return undefined
  const params = isPlainObject(body.params) ? body.params : {}
  const op: Operation = { method: body.method.slice(0, 128) }
  if (id !== undefined) op.requestId = id
  if (op.method === 'tools/call') op.target = op.tool = str(params.name)
  else if (op.method === 'prompts/get') op.target = op.prompt = str(params.name)
  else if (op.method.startsWith('resources/') || op.method === 'notifications/resources/updated') op.uri = str(params.uri)
  else if (op.method.startsWith('tasks/')) op.taskId = str(params.taskId)
  if (isPlainObject(params._meta)) op.meta = params._meta
  return op
}

/** `Mcp-Meta` when it decodes to an object; a bad one is the route's to refuse, not telemetry's. */
function headerMeta(request: FastifyRequest): Record<string, unknown> | undefined {
  const raw = request.headers[Header.meta]
  if (raw === undefined) return undefined
  try {
    return decodeJsonHeader(Header.meta, raw, 'object') as Record<string, unknown>
  } catch {
    return undefined
  }
}
