import {
  ROOT_CONTEXT, SpanKind, SpanStatusCode, context, defaultTextMapGetter, trace,
  type Attributes, type Context, type Link, type Span, type TextMapPropagator, type Tracer
} from '@opentelemetry/api'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import { isPlainObject } from '../headers.js'
import { metaGetter, type TaskLinks } from './links.js'
import { PREFIX, type Instruments } from './metrics.js'
import { jsonRpcOperation, pureHttpOperation, routeMethods, type Operation } from './operation.js'

/** What one MCP request records while it is served (the core's wrappers find it in the context). */
export interface Served {
  /** The route's MCP method; '' on `/mcp` until the body names it. */
  readonly route: string
  readonly started: number
  readonly startTime: number
  op?: Operation
  span?: Span
  errorType?: string
  statusCode?: string
  message?: string
  failed?: boolean
  /** The `traceparent` of the call this request continues (an MRTR round). */
  origin?: string
  round?: number
  done?: boolean
}

/** Where a route's config keeps its MCP method by HTTP method ('' for JSON-RPC on `/mcp`). */
const OPS = Symbol('mcp-pure-http operations')

/**
 * Where the core's wrappers find the request being served: by its span, the active one while the
 * handler runs (one context made per request, not two: each `setValue` copies the context's map).
 */
const SERVED = new WeakMap<Span, Served>()
export const servedBy = (span: Span | undefined): Served | undefined => (span === undefined ? undefined : SERVED.get(span))
/** Where a request keeps what it records (a request decorator). */
const SERVED_ON = Symbol('mcp-pure-http served')

export interface Kit {
  tracer: Tracer | undefined
  propagator: TextMapPropagator
  m: Instruments
  tasks: TaskLinks
}

// Methods a metric may name: anything else a client sends is `_OTHER` there (bounded cardinality).
const KNOWN = new Set([
  'initialize', 'ping', 'logging/setLevel', 'server/discover', 'completion/complete', 'tools/list', 'tools/call',
  'prompts/list', 'prompts/get', 'resources/list', 'resources/templates/list', 'resources/read',
  'resources/subscribe', 'resources/unsubscribe', 'subscriptions/listen', 'tasks/get', 'tasks/update', 'tasks/cancel',
  'notifications/poll', 'notifications/acknowledge', 'requests/poll', 'requests/answer',
  'notifications/initialized', 'notifications/cancelled', 'notifications/roots/list_changed', 'notifications/progress'
])

/**
 * One SERVER span and one `mcp.server.operation.duration` measurement per MCP request on both
 * faces of this scope, by the OpenTelemetry MCP conventions: started when the request arrives,
 * named once the route or the JSON-RPC body says what it is, active while the handler runs (so the
 * store's and the core's spans are its children), ended when the response is sent.
 */
export function requestHooks(fastify: FastifyInstance, mcp: McpServer, kit: Kit): void {
  const prefix = fastify.prefix
  // On the request itself (a decorator: every request has the slot, so its shape never changes);
  // a scope inside another instrumented one shares its parent's.
  if (!fastify.hasRequestDecorator(SERVED_ON)) fastify.decorateRequest(SERVED_ON, null)
  const served = {
    get: (request: FastifyRequest) => (request as unknown as Record<symbol, Served | null>)[SERVED_ON] ?? undefined,
    set: (request: FastifyRequest, s: Served) => void ((request as unknown as Record<symbol, Served | null>)[SERVED_ON] = s)
  }

  // Each route's MCP method, worked out when it is registered (the routes come after this hook):
  // a request only reads its route's config.
  fastify.addHook('onRoute', (route) => {
    const config = (route.config ?? {}) as { mcpJsonRpc?: boolean }
    const methods = config.mcpJsonRpc === true ? { POST: '' } : routeMethods(route.url, route.method, prefix)
    if (methods !== undefined) route.config = { ...config, [OPS]: methods } as typeof route.config
  })

  fastify.addHook('onRequest', (request, reply, done) => {
    const route = (request.routeOptions.config as { [OPS]?: Record<string, string> })[OPS]?.[request.method]
    if (route !== undefined) {
      const s: Served = { route, started: performance.now(), startTime: Date.now() }
      served.set(request, s)
      kit.m.active.n++
      // Sent, or the client went away first (Fastify's onRequestAbort only covers a body still
      // arriving, and onResponse never comes then): either way the response is closed, once
      // (`on`, not `once`: a response closes once, and once's wrapper costs every request).
      reply.raw.on('close', () => {
        if (s.done !== true) finish(request, reply.raw.headersSent ? reply.statusCode : undefined, s, mcp, kit)
      })
    }
    done()
  })

  // The handler and everything it awaits run in the span's context: their spans are the request's
  // children. Metrics alone need neither (on Node 20 an active AsyncLocalStorage costs every
  // promise): the operation is worked out when the response is done.
  const tracer = kit.tracer
  if (tracer !== undefined) {
    fastify.addHook('preHandler', (request, _reply, done) => {
      const s = served.get(request)
      if (s === undefined) return done()
      s.op = operationOf(request, s, kit)
      if (s.op === undefined) return done()
      context.with(begin(request, s, kit, tracer), done)
    })
  }

  fastify.addHook('onError', (request, _reply, _err, done) => {
    const s = served.get(request)
    if (s !== undefined) s.failed = true
    done()
  })

  fastify.addHook('onSend', (request, reply, payload, done) => {
    const s = served.get(request)
    if (s !== undefined && typeof payload === 'string') {
      if (s.failed === true || reply.statusCode >= 400) wireError(s, payload)
      else if ((s.route === '' ? (s.op ??= operationOf(request, s, kit))?.method : s.route) === 'tools/call' && payload.includes('"isError":true')) toolError(s, payload)
    }
    done(null, payload)
  })
}

function operationOf(request: FastifyRequest, s: Served, kit: Kit): Operation | undefined {
  return s.route === '' ? jsonRpcOperation(request.body) : pureHttpOperation(request, s.route, kit.tracer !== undefined)
}

/** Start the span (its parent from `_meta`, else the HTTP headers) and the context the handler runs in. */
function begin(request: FastifyRequest, s: Served, kit: Kit, tracer: Tracer): Context {
  const op = s.op!
  const fromMeta = op.meta === undefined ? undefined : kit.propagator.extract(ROOT_CONTEXT, op.meta, metaGetter)
  const fromHttp = kit.propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter)
  const metaParent = fromMeta === undefined ? undefined : trace.getSpanContext(fromMeta)
  const httpParent = trace.getSpanContext(fromHttp)
  const links: Link[] = []
  // The conventions: the MCP context is the parent, the transport's (when another) a link.
  if (metaParent !== undefined && httpParent !== undefined && httpParent.spanId !== metaParent.spanId) {
    links.push({ context: httpParent, attributes: { [`${PREFIX}.link`]: 'http' } })
  }
  const task = op.taskId === undefined ? undefined : kit.tasks.get(op.taskId)
  if (task !== undefined) links.push({ context: task, attributes: { [`${PREFIX}.link`]: 'task' } })
  const parent = metaParent !== undefined ? fromMeta! : fromHttp
  s.span = tracer.startSpan(op.target === undefined ? op.method : `${op.method} ${op.target}`, {
    kind: SpanKind.SERVER,
    startTime: s.startTime,
    attributes: spanAttributes(request, op),
    links
  }, parent)
  SERVED.set(s.span, s)
  return trace.setSpan(parent, s.span)
}

function spanAttributes(request: FastifyRequest, op: Operation): Attributes {
  const a: Attributes = {
    'mcp.method.name': op.method,
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'network.protocol.version': request.raw.httpVersion,
    'client.address': request.ip
  }
  if (request.socket.remotePort !== undefined) a['client.port'] = request.socket.remotePort
  if (op.tool !== undefined) Object.assign(a, { 'gen_ai.tool.name': op.tool, 'gen_ai.operation.name': 'execute_tool' })
  if (op.prompt !== undefined) a['gen_ai.prompt.name'] = op.prompt
  if (op.uri !== undefined) a['mcp.resource.uri'] = op.uri
  if (op.requestId !== undefined) a['jsonrpc.request.id'] = op.requestId
  if (op.taskId !== undefined) a[`${PREFIX}.task.id`] = op.taskId
  const session = request.headers['mcp-session-id']
  if (typeof session === 'string') a['mcp.session.id'] = session
  return a
}

/** The JSON-RPC error of an error response (Pure HTTP: the body; `/mcp`: the envelope's `error`). */
function wireError(s: Served, payload: string): void {
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    return
  }
  const error = isPlainObject(body) && isPlainObject(body.error) ? body.error : body
  if (!isPlainObject(error) || typeof error.code !== 'number') return
  s.errorType = s.statusCode = String(error.code)
  if (typeof error.message === 'string') s.message = error.message
}

/** A `CallToolResult` with `isError: true` (Pure HTTP: the body; `/mcp`: the envelope's `result`): the conventions' `tool_error`. */
function toolError(s: Served, payload: string): void {
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    return
  }
  const result = isPlainObject(body) && isPlainObject(body.result) ? body.result : body
  if (isPlainObject(result) && result.isError === true) s.errorType ??= 'tool_error'
}

function finish(request: FastifyRequest, status: number | undefined, s: Served, mcp: McpServer, kit: Kit): void {
  s.done = true
  kit.m.active.n--
  if (status === 429 || status === 503) kit.m.refusals.add(1, { 'http.response.status_code': status })
  // Metrics alone, or refused before its handler (admission, rate limit, load shedding): the
  // operation now, and a span started now, dated back.
  const op = (s.op ??= operationOf(request, s, kit))
  if (op === undefined) return
  if (kit.tracer !== undefined && s.span === undefined) begin(request, s, kit, kit.tracer)
  if (status === undefined) s.errorType ??= 'aborted'
  else if (s.errorType === undefined && status >= 500) s.errorType = String(status)
  const version = (request.mcpState as { version?: string } | null)?.version
  const method = KNOWN.has(op.method) ? op.method : '_OTHER'
  const httpVersion = request.raw.httpVersion
  // Names from the catalogue only: a client's made-up names would make the metric unbounded.
  const tool = op.tool !== undefined && mcp.tools.has(op.tool) ? op.tool : undefined
  const prompt = op.prompt !== undefined && mcp.prompts.has(op.prompt) ? op.prompt : undefined
  // The series by a key of its attributes' values (none holds a NUL: methods, versions, catalogue names, codes).
  const key = `${method}\0${httpVersion}\0${version ?? ''}\0${tool ?? ''}\0${prompt ?? ''}\0${s.errorType ?? ''}\0${s.statusCode ?? ''}`
  const duration = kit.m.duration
  const series = duration.get(key) ?? duration.add(key, metricAttributes(method, httpVersion, version, tool, prompt, s))
  series.record((performance.now() - s.started) / 1000)
  const span = s.span
  if (span === undefined) return
  if (version !== undefined) span.setAttribute('mcp.protocol.version', version)
  if (status !== undefined) span.setAttribute('http.response.status_code', status)
  if (s.errorType !== undefined) {
    span.setAttribute('error.type', s.errorType)
    if (s.statusCode !== undefined) span.setAttribute('rpc.response.status_code', s.statusCode)
    span.setStatus({ code: SpanStatusCode.ERROR, ...(s.message === undefined ? {} : { message: s.message }) })
  }
  span.end()
}

/** The attributes of a duration series, made the first time its key is seen. */
function metricAttributes(method: string, httpVersion: string, version: string | undefined, tool: string | undefined, prompt: string | undefined, s: Served): Attributes {
  const attributes: Attributes = {
    'mcp.method.name': method,
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'network.protocol.version': httpVersion
  }
  if (version !== undefined) attributes['mcp.protocol.version'] = version
  if (tool !== undefined) Object.assign(attributes, { 'gen_ai.tool.name': tool, 'gen_ai.operation.name': 'execute_tool' })
  if (prompt !== undefined) attributes['gen_ai.prompt.name'] = prompt
  if (s.errorType !== undefined) attributes['error.type'] = s.errorType
  if (s.statusCode !== undefined) attributes['rpc.response.status_code'] = s.statusCode
  return attributes
}
