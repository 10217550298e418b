import type { Static } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { CallContext } from '../core/call-context.js'
import { createValidator, describeErrors } from '../core/validation.js'
import { errors } from '../errors.js'
import { Header } from '../headers.js'
import { METHODS, notOffered, type At, type Core, type MethodEntry, type MethodName } from '../methods.js'
import type { Era } from '../protocol.js'
import { checkParamHeaders } from './standard-headers.js'
import type { ListenStreams } from '../messaging/listen.js'
import { jsonRpcFraming, openEventStream } from '../http/event-stream.js'
import { STREAMED, type RequestId } from './message.js'

/** What a method gets from the face besides its params. */
export interface Call extends At {
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  readonly id: RequestId
  readonly streams: ListenStreams
  /** The core's context of this request, built the way the Pure HTTP routes build it. */
  context(): Promise<CallContext>
}

/** A result object, the JSON text of one (cached list pages and discover), or {@link STREAMED}. */
export type Answer = object | string | typeof STREAMED

interface Method {
  readonly eras: readonly Era[]
  readonly capability: MethodEntry['capability']
  readonly validate: ValidateFunction
  readonly run: (params: never, call: Call) => Promise<Answer>
}

const ajv = createValidator()

/**
 * What this face adds to a table entry: the header initialize answers with, the 2026-07-28
 * `Mcp-Param-*` check of a tool call, and the stream of subscriptions/listen.
 */
const FACE: { readonly [K in MethodName]?: Method['run'] } = {
  initialize: async (p: Static<typeof METHODS.initialize.params>, call) => {
    // The handshake is the legacy era's: a client asking for 2026-07-28 here gets the newest legacy version.
    const { result } = await METHODS.initialize.core(call.request.server.mcp, p, { era: call.era, context: call.context, handshake: LEGACY_ONLY })
    call.reply.header(Header.protocolVersion, result.protocolVersion)
    return result
  },
  'tools/call': async (p: Static<typeof METHODS['tools/call']['params']>, call) => {
    const tool = call.request.server.mcp.tools.get(p.name)
    if (tool !== undefined && call.era === 'modern') checkParamHeaders(tool.definition.inputSchema, p.arguments, call.request.headers)
    return METHODS['tools/call'].core(call.request.server.mcp, p, call)
  },
  'subscriptions/listen': async (p: Static<typeof METHODS['subscriptions/listen']['params']>, call) => {
    const { request, reply, id, streams } = call
    streams.open(request.server.mcp, id, p.notifications, openEventStream(request, reply, streams.keepAliveMs, jsonRpcFraming(id)))
    return STREAMED
  }
}
const LEGACY_ONLY = { legacyOnly: true }

/** The table's core call, its answer as this face sends it (the JSON text where the core has it). */
function tableCall(entry: MethodEntry): Method['run'] {
  const core = entry.core as Core<never>
  const json = entry.json
  if (json === undefined) return async (p, call) => (await core(call.request.server.mcp, p, call)) as object
  return async (p, call) => json((await core(call.request.server.mcp, p, call)) as never)
}

/** Every JSON-RPC method, from the table: its eras, its params' validator (compiled once), its run. */
const ALL = new Map<string, Method>(
  Object.entries(METHODS as Record<MethodName, MethodEntry>).map(([name, entry]) => {
    const face = FACE[name as MethodName]
    return [name, { eras: entry.eras, capability: entry.capability, validate: ajv.compile(entry.params), run: face ?? tableCall(entry) }]
  })
)

/** The method, or -32601: unknown, or not part of the request's era. */
export function methodFor(name: string, era: Era): Method {
  const m = ALL.get(name)
  if (m === undefined || !m.eras.includes(era)) throw errors.methodNotFound(`Method not found: ${name.slice(0, 128)}`)
  return m
}

/** Check the params against the method's schema (400 -32602 naming the field), then run it. */
export function run(m: Method, name: string, params: Record<string, unknown>, call: Call): Promise<Answer> {
  if (!m.validate(params)) {
    const unknown = notOffered(call.request.server.mcp, m.capability)
    if (unknown !== undefined) throw unknown
    const { message, path } = describeErrors(m.validate.errors)
    throw errors.invalidParams(`Invalid params for ${name}: ${message}`, { path })
  }
  return m.run(params as never, call)
}
