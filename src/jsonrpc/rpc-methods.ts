import { Type, type Static, type TSchema } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { CallContext } from '../core/call-context.js'
import { ListKind } from '../core/registry.js'
import { createValidator, describeErrors } from '../core/validation.js'
import { errors } from '../errors.js'
import { Header } from '../headers.js'
import type { Era } from '../protocol.js'
import { MetaSchema } from '../schema/common.js'
import { CompleteBodySchema } from '../schema/completions.js'
import { InitializeBodySchema, SetLevelBodySchema } from '../schema/lifecycle.js'
import { GetPromptBodySchema } from '../schema/prompts.js'
import { ReadResourceBodySchema, SubscribeBodySchema } from '../schema/resources.js'
import { UpdateTaskBodySchema } from '../schema/tasks.js'
import { CallToolBodySchema } from '../schema/tools.js'
import { checkParamHeaders } from './standard-headers.js'
import { ListenParamsSchema, type ListenStreams } from './listen.js'
import type { RequestId, STREAMED } from './message.js'

/** What a method gets from the face besides its params. */
export interface Call {
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  readonly id: RequestId
  readonly era: Era
  readonly streams: ListenStreams
  /** The core's context of this request, built the way the Pure HTTP routes build it. */
  context(): Promise<CallContext>
}

/** A result object, the JSON text of one (cached list pages and discover), or {@link STREAMED}. */
export type Answer = object | string | typeof STREAMED

interface Method {
  readonly eras: readonly Era[]
  readonly validate: ValidateFunction
  readonly run: (params: never, call: Call) => Promise<Answer>
}

const ajv = createValidator()
const LEGACY: readonly Era[] = ['legacy']
const MODERN: readonly Era[] = ['modern']
const BOTH: readonly Era[] = ['legacy', 'modern']

function method<S extends TSchema>(eras: readonly Era[], schema: S, run: (params: Static<S>, call: Call) => Promise<Answer>): Method {
  return { eras, validate: ajv.compile(schema), run: run as Method['run'] }
}

const Meta = { _meta: Type.Optional(MetaSchema) }
const Empty = Type.Object(Meta)
const Cursor = Type.Object({ cursor: Type.Optional(Type.String({ maxLength: 512 })), ...Meta })
const Name = Type.String({ minLength: 1, maxLength: 128 })
// The tasks methods refuse a client that did not declare the Tasks extension (its MUST).
const TaskId = Type.String({ minLength: 1, maxLength: 128 })

const list = (kind: ListKind) =>
  method(BOTH, Cursor, async (p, call) => call.request.server.mcp.list(kind, p.cursor, call.era).body)

/**
 * Every JSON-RPC method, the eras that define it and its params. Each calls the same core method as
 * the Pure HTTP route for it; 2026-07-28 removed initialize, ping, logging/setLevel and
 * resources/(un)subscribe (subscriptions/listen replaces the last two), so those are -32601 there.
 */
const METHODS = new Map<string, Method>([
  ['initialize', method(LEGACY, InitializeBodySchema, async (p, call) => {
    // The handshake is the legacy era's: a client asking for 2026-07-28 here gets the newest legacy version.
    const { result } = await call.request.server.mcp.initialize(p, await call.context(), { legacyOnly: true })
    call.reply.header(Header.protocolVersion, result.protocolVersion)
    return result
  })],
  ['ping', method(LEGACY, Empty, async () => ({}))],
  ['logging/setLevel', method(LEGACY, SetLevelBodySchema, async (p, call) => {
    await call.request.server.mcp.setLogLevel(await call.context(), p.level)
    return {}
  })],
  ['server/discover', method(MODERN, Empty, async (_p, call) => call.request.server.mcp.discover(call.era).body)],
  ['tools/list', list(ListKind.tools)],
  ['prompts/list', list(ListKind.prompts)],
  ['resources/list', list(ListKind.resources)],
  ['resources/templates/list', list(ListKind.templates)],
  ['tools/call', method(BOTH, Type.Object({ name: Name, ...CallToolBodySchema.properties }), async (p, call) => {
    const mcp = call.request.server.mcp
    const tool = mcp.tools.get(p.name)
    if (tool !== undefined && call.era === 'modern') checkParamHeaders(tool.definition.inputSchema, p.arguments, call.request.headers)
    return mcp.callTool(p.name, p, await call.context())
  })],
  ['prompts/get', method(BOTH, Type.Object({ name: Name, ...GetPromptBodySchema.properties }), async (p, call) =>
    call.request.server.mcp.getPrompt(p.name, p, await call.context())
  )],
  ['resources/read', method(BOTH, Type.Object({ uri: Type.String({ minLength: 1, maxLength: 4096 }), ...ReadResourceBodySchema.properties }), async (p, call) =>
    call.request.server.mcp.readResource(p.uri, p, await call.context())
  )],
  ['resources/subscribe', method(LEGACY, SubscribeBodySchema, async (p, call) => {
    await call.request.server.mcp.subscribe(await call.context(), p.uri)
    return {}
  })],
  ['resources/unsubscribe', method(LEGACY, SubscribeBodySchema, async (p, call) => {
    await call.request.server.mcp.unsubscribe(await call.context(), p.uri)
    return {}
  })],
  ['completion/complete', method(BOTH, CompleteBodySchema, async (p, call) =>
    call.request.server.mcp.complete(p, await call.context())
  )],
  ['subscriptions/listen', method(MODERN, ListenParamsSchema, async (p, call) => call.streams.open(call, p.notifications))],
  // The Tasks extension, for a client that declared it (else -32021). Its v2 drops tasks/result and
  // tasks/list (the result is inlined in tasks/get), so those stay -32601.
  ['tasks/get', method(BOTH, Type.Object({ taskId: TaskId, ...Meta }), async (p, call) =>
    call.request.server.mcp.tasks.get(await call.context(), p.taskId)
  )],
  ['tasks/update', method(BOTH, Type.Object({ taskId: TaskId, ...UpdateTaskBodySchema.properties }), async (p, call) => {
    await call.request.server.mcp.tasks.update(await call.context(), p.taskId, p.inputResponses)
    return { resultType: 'complete' }
  })],
  ['tasks/cancel', method(BOTH, Type.Object({ taskId: TaskId, ...Meta }), async (p, call) => {
    await call.request.server.mcp.tasks.cancel(await call.context(), p.taskId)
    return { resultType: 'complete' }
  })]
])

/** The method, or -32601: unknown, or not part of the request's era. */
export function methodFor(name: string, era: Era): Method {
  const m = METHODS.get(name)
  if (m === undefined || !m.eras.includes(era)) throw errors.methodNotFound(`Method not found: ${name.slice(0, 128)}`)
  return m
}

/** Check the params against the method's schema (400 -32602 naming the field), then run it. */
export function run(m: Method, name: string, params: Record<string, unknown>, call: Call): Promise<Answer> {
  if (!m.validate(params)) {
    const { message, path } = describeErrors(m.validate.errors)
    throw errors.invalidParams(`Invalid params for ${name}: ${message}`, { path })
  }
  return m.run(params as never, call)
}
