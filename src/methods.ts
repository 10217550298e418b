import { Type, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox'
import type { CallContext } from './core/call-context.js'
import type { InitializeOptions, Offer } from './core/lifecycle.js'
import type { Representation } from './core/list-cache.js'
import { isThenable, type MaybePromise } from './core/maybe-promise.js'
import type { McpServer } from './core/mcp-server.js'
import { ListKind } from './core/registry.js'
import { errors, type McpError } from './errors.js'
import type { Era } from './protocol.js'
import { MetaSchema } from './schema/common.js'
import { CompleteBodySchema, CompleteResultSchema } from './schema/completions.js'
import { DiscoverResultSchema, InitializeBodySchema, InitializeResultSchema, SetLevelBodySchema } from './schema/lifecycle.js'
import { GetPromptBodySchema, GetPromptResponseSchema, ListPromptsResultSchema } from './schema/prompts.js'
import {
  ListResourceTemplatesResultSchema,
  ListResourcesResultSchema,
  ReadResourceBodySchema,
  ReadResourceResponseSchema,
  SubscribeBodySchema
} from './schema/resources.js'
import { ListenParamsSchema } from './schema/subscriptions.js'
import { AckSchema, CancelTaskBodySchema, CreateTaskResultSchema, DetailedTaskSchema, UpdateTaskBodySchema } from './schema/tasks.js'
import { CallToolBodySchema, CallToolResponseSchema, ListToolsResultSchema } from './schema/tools.js'
import type { ServedTask } from './tasks/task-methods.js'

/**
 * What a face hands a method's core call besides its params: the request's era, and its context,
 * built only when asked for (lists and discover need none, and a JSON-RPC request that may stream
 * takes its stream slot when its context is built).
 */
export interface At {
  readonly era: Era
  context(): MaybePromise<CallContext>
  /** `initialize` only: what the face's handshake allows (see {@link InitializeOptions}). */
  readonly handshake?: InitializeOptions
}

/** One Pure HTTP route of a method (SEP-1612, docs/http.md); `url` is under the plugin's prefix. */
export interface RestRoute {
  readonly method: 'GET' | 'POST'
  readonly url: string
  readonly operationId: string
}

/** The core call of a method: the same function for both faces. */
export type Core<P = never> = (mcp: McpServer, params: P, at: At) => unknown

/** One MCP method: every fact about it that both faces, the OpenAPI document and the tests read. */
export interface MethodEntry<B extends TObject = TObject, T extends TProperties = TProperties, C extends Core<never> | undefined = Core<never> | undefined> {
  /** The eras whose revision defines it; on /mcp any other era gets -32601 (404 in 2026-07-28). */
  readonly eras: readonly Era[]
  /** The part of the server's capabilities it belongs to: not offered (`McpServer.offer`), it is -32601 on both faces. */
  readonly capability?: Offer
  /** What a REST route's path carries (`name`, `uri`, `taskId`); /mcp takes it among the params. */
  readonly target: T
  /** The params beside the target: a REST route's POST body. */
  readonly body: B
  /** The JSON-RPC params: target and body in one object, validated by a validator compiled once. */
  readonly params: TObject<T & B['properties']>
  /** The result on /mcp (a REST route sends it as its 200 body, or a 202 with none). */
  readonly result: TSchema
  /**
   * Its Pure HTTP routes, served in every protocol version: the binding keeps `/initialize`, `/ping`,
   * `/logLevel` and `/resources/(un)subscribe` for every client (docs/sep-1612.md). None: /mcp only.
   */
  readonly rest: readonly RestRoute[]
  /**
   * The core call, the same for both faces; `undefined` where the face itself serves the method
   * (`subscriptions/listen` is a stream of the JSON-RPC face).
   */
  readonly core: C
  /** Where the core hands back the result's JSON text (cached lists, discover, a task): that text. */
  readonly json?: (answer: never) => string
  /** A method 2026-07-28 removed: what a client of that revision does instead (said in the REST face's 404). */
  readonly instead?: string
}

const LEGACY: readonly Era[] = ['legacy']
const MODERN: readonly Era[] = ['modern']
const BOTH: readonly Era[] = ['legacy', 'modern']

const Meta = { _meta: Type.Optional(MetaSchema) }
const Empty = Type.Object(Meta)
const Cursor = Type.Object({ cursor: Type.Optional(Type.String({ maxLength: 512 })), ...Meta })
const Name = { name: Type.String({ minLength: 1, maxLength: 128 }) }
const Uri = {
  uri: Type.String({ minLength: 1, maxLength: 4096, description: 'The whole resource URI, percent-encoded as one path segment (encodeURIComponent).' })
}
const TaskId = { taskId: Type.String({ minLength: 1, maxLength: 128 }) }
const EmptyResult = Type.Object({}, { description: 'An empty result.' })
const COMPLETE = { resultType: 'complete' } as const

type Params<B extends TObject, T extends TProperties> = Static<TObject<T & B['properties']>>

interface Spec<B extends TObject, T extends TProperties, C> {
  readonly eras: readonly Era[]
  readonly capability?: Offer
  readonly target?: T
  readonly body: B
  readonly result: TSchema
  readonly rest: readonly RestRoute[]
  readonly core: C
  readonly json?: (answer: C extends (...args: never[]) => infer R ? Awaited<R> : never) => string
  readonly instead?: string
}

/** An entry, its JSON-RPC params composed from target and body; `core` keeps its own type. */
function method<B extends TObject, C extends ((mcp: McpServer, params: Params<B, T>, at: At) => unknown) | undefined, T extends TProperties = Record<never, never>>(
  spec: Spec<B, T, C>
): MethodEntry<B, T, C> {
  const target = spec.target ?? ({} as T)
  const params = Type.Object({ ...target, ...spec.body.properties }) as unknown as TObject<T & B['properties']>
  const core = spec.capability === undefined || spec.core === undefined ? spec.core : offered(spec.capability, spec.core)
  return { ...spec, core, target, params } as MethodEntry<B, T, C>
}

/** The core call, refused while the server does not offer `capability` (as {@link notOffered} says). */
function offered<C extends (mcp: McpServer, params: never, at: At) => unknown>(capability: Offer, core: C): C {
  return ((mcp: McpServer, params: never, at: At) => {
    if (!mcp.offers[capability]) throw errors.methodNotFound()
    return core(mcp, params, at)
  }) as C
}

/**
 * A method of a capability the server does not offer is refused as the official SDKs refuse one
 * with no handler: -32601 "Method not found", whatever its params (so a face asks this before it
 * answers that the params are wrong). Thrown by the core call at once, before it has a context or
 * a stream, so that both faces send it as an ordinary error.
 */
export function notOffered(mcp: McpServer, capability: Offer | undefined): McpError | undefined {
  return capability === undefined || mcp.offers[capability] ? undefined : errors.methodNotFound()
}

/** The context once there, without a promise when there is one already (REST's modern era). */
function withContext<R>(at: At, run: (ctx: CallContext) => MaybePromise<R>): MaybePromise<R> {
  const ctx = at.context()
  return isThenable(ctx) ? ctx.then(run) : run(ctx)
}

const list = (kind: ListKind, result: TSchema, url: string, operationId: string) =>
  method({
    eras: BOTH,
    capability: kind === ListKind.templates ? 'resources' : kind,
    body: Cursor,
    result,
    rest: [{ method: 'GET', url, operationId }],
    core: (mcp, p, at): Representation => mcp.list(kind, p.cursor, at.era),
    json: (r) => r.body
  })

/**
 * Every MCP method this server answers, once. Adding one is an entry here, its core function and its
 * tests; /mcp dispatches from it, the REST routes take their URL, operationId, path params, body and
 * core call from it (and `test/faces/method-table.test.ts` refuses a route it does not list), and the era
 * tests walk it. 2026-07-28 removed initialize, ping, logging/setLevel and resources/(un)subscribe
 * (subscriptions/listen replaces the last two). The Tasks extension (for a client that declared it,
 * else -32021) has tasks/get, tasks/update and tasks/cancel in every era; its v2 dropped tasks/result
 * and tasks/list (the result is inlined in tasks/get), which 2025-11-25's own experimental tasks
 * had: they are not served (docs/jsonrpc.md).
 */
export const METHODS = {
  initialize: method({
    eras: LEGACY,
    body: InitializeBodySchema,
    result: InitializeResultSchema,
    rest: [{ method: 'POST', url: '/initialize', operationId: 'initialize' }],
    instead: 'there is no handshake: each request carries its own _meta, and GET /discover says what the server offers',
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.initialize(p, ctx, at.handshake))
  }),
  ping: method({
    eras: LEGACY,
    body: Empty,
    result: EmptyResult,
    rest: [{ method: 'GET', url: '/ping', operationId: 'ping' }],
    instead: 'any request shows the server is there (GET /discover; GET /health without MCP headers)',
    core: (_mcp, _p, _at) => ({})
  }),
  'logging/setLevel': method({
    eras: LEGACY,
    capability: 'logging',
    body: SetLevelBodySchema,
    result: EmptyResult,
    rest: [{ method: 'POST', url: '/logLevel', operationId: 'setLogLevel' }],
    instead: 'a request names its log level in _meta["io.modelcontextprotocol/logLevel"]',
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.setLogLevel(ctx, p.level).then(() => ({})))
  }),
  'server/discover': method({
    eras: MODERN,
    body: Empty,
    result: DiscoverResultSchema,
    rest: [{ method: 'GET', url: '/discover', operationId: 'discover' }],
    core: (mcp, _p, at): Representation => mcp.discover(at.era),
    json: (r) => r.body
  }),
  'tools/list': list(ListKind.tools, ListToolsResultSchema, '/tools', 'listTools'),
  'prompts/list': list(ListKind.prompts, ListPromptsResultSchema, '/prompts', 'listPrompts'),
  'resources/list': list(ListKind.resources, ListResourcesResultSchema, '/resources', 'listResources'),
  'resources/templates/list': list(ListKind.templates, ListResourceTemplatesResultSchema, '/resources/templates', 'listResourceTemplates'),
  'tools/call': method({
    eras: BOTH,
    capability: 'tools',
    target: Name,
    body: CallToolBodySchema,
    result: Type.Union([CallToolResponseSchema, CreateTaskResultSchema]),
    rest: [{ method: 'POST', url: '/tools/:name/calls', operationId: 'callTool' }],
    // No closure when the context is there already (the hot path: a REST call in 2026-07-28).
    core: (mcp, p, at) => {
      const ctx = at.context()
      return isThenable(ctx) ? ctx.then((c) => mcp.callTool(p.name, p, c)) : mcp.callTool(p.name, p, ctx)
    }
  }),
  'prompts/get': method({
    eras: BOTH,
    capability: 'prompts',
    target: Name,
    body: GetPromptBodySchema,
    result: GetPromptResponseSchema,
    rest: [
      { method: 'GET', url: '/prompts/:name', operationId: 'getPrompt' },
      { method: 'POST', url: '/prompts/:name', operationId: 'getPromptWithBody' }
    ],
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.getPrompt(p.name, p, ctx))
  }),
  'resources/read': method({
    eras: BOTH,
    capability: 'resources',
    target: Uri,
    body: ReadResourceBodySchema,
    result: ReadResourceResponseSchema,
    rest: [
      { method: 'GET', url: '/resources/:uri', operationId: 'readResource' },
      { method: 'POST', url: '/resources/:uri', operationId: 'readResourceWithBody' }
    ],
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.readResource(p.uri, p, ctx))
  }),
  'resources/subscribe': method({
    eras: LEGACY,
    capability: 'subscribe',
    body: SubscribeBodySchema,
    result: EmptyResult,
    rest: [{ method: 'POST', url: '/resources/subscribe', operationId: 'subscribeResource' }],
    instead: 'subscriptions/listen with notifications.resourceSubscriptions',
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.subscribe(ctx, p.uri).then(() => ({})))
  }),
  'resources/unsubscribe': method({
    eras: LEGACY,
    capability: 'subscribe',
    body: SubscribeBodySchema,
    result: EmptyResult,
    rest: [{ method: 'POST', url: '/resources/unsubscribe', operationId: 'unsubscribeResource' }],
    instead: 'subscriptions/listen: end the stream',
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.unsubscribe(ctx, p.uri).then(() => ({})))
  }),
  'completion/complete': method({
    eras: BOTH,
    capability: 'completions',
    body: CompleteBodySchema,
    result: CompleteResultSchema,
    rest: [{ method: 'POST', url: '/completions', operationId: 'complete' }],
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.complete(p, ctx))
  }),
  'subscriptions/listen': method({
    eras: MODERN,
    body: ListenParamsSchema,
    result: EmptyResult,
    rest: [{ method: 'POST', url: '/subscriptions/listen', operationId: 'listenSubscriptions' }],
    core: undefined
  }),
  'tasks/get': method({
    eras: BOTH,
    target: TaskId,
    body: Empty,
    result: DetailedTaskSchema,
    rest: [{ method: 'GET', url: '/tasks/:taskId', operationId: 'getTask' }],
    // Served pre-serialized (a Redis store keeps the task as JSON): both faces send that text.
    core: (mcp, p, at): MaybePromise<ServedTask> => withContext(at, (ctx) => mcp.tasks.served(ctx, p.taskId)),
    json: (t) => t.representation.body
  }),
  'tasks/update': method({
    eras: BOTH,
    target: TaskId,
    body: UpdateTaskBodySchema,
    result: AckSchema,
    rest: [{ method: 'POST', url: '/tasks/:taskId/update', operationId: 'updateTask' }],
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.tasks.update(ctx, p.taskId, p.inputResponses).then(() => COMPLETE))
  }),
  'tasks/cancel': method({
    eras: BOTH,
    target: TaskId,
    body: CancelTaskBodySchema,
    result: AckSchema,
    rest: [{ method: 'POST', url: '/tasks/:taskId/cancel', operationId: 'cancelTask' }],
    core: (mcp, p, at) => withContext(at, (ctx) => mcp.tasks.cancel(ctx, p.taskId).then(() => COMPLETE))
  })
} as const

export type MethodName = keyof typeof METHODS

/** Every REST route of the table, with the method it serves, by operationId. */
export const REST_ROUTES: ReadonlyMap<string, RestRoute & { readonly name: MethodName }> = new Map(
  Object.entries(METHODS).flatMap(([name, e]) => e.rest.map((r) => [r.operationId, { ...r, name: name as MethodName }] as const))
)
