import type { AnySchema, Infer, InferInput } from './standard-schema.js'
import type { Meta } from '../schema/common.js'
import type { ContentBlock, ResourceContents } from '../schema/content.js'
import type { InputResponses } from '../schema/mrtr.js'
import type { HandRolledInputRequired } from '../mrtr/rounds.js'
import type { ResolverMap, Values } from '../mrtr/resolvers.js'
import type { Outcome, Root, SampledMessage, sample } from '../mrtr/questions.js'
import type { TaskContext } from '../tasks/runner.js'
import type { GetPromptResult, PromptMessage } from '../schema/prompts.js'
import type { Resource, ResourceTemplate } from '../schema/resources.js'
import type { Tool, ToolAnnotations } from '../schema/tools.js'
import type { RequestContext } from './request-context.js'
import type { MaybePromise } from './maybe-promise.js'
import type { UiResourceMeta, UiToolMeta } from './apps.js'

/**
 * The context of a request that may be retried with input (tools/call, prompts/get, resources/read,
 * SEP-2322).
 */
export interface RetryableContext<S = unknown, R = Record<string, unknown>> extends RequestContext {
  /**
   * Answers to the questions this server asked in the previous round, by key, each already checked
   * against what was asked (shape, and a form's schema). Keys it did not ask are dropped.
   */
  readonly inputResponses: InputResponses | undefined
  /** The state a hand-rolled handler returned with its last `inputRequired(...)`, opened and verified. */
  readonly requestState: S | undefined
  /** The values of the declared resolvers. */
  readonly resolved: R
  /** Where a resumed request picks up: what the previous part passed to `resumable(result, next)`. */
  readonly resumed?: unknown
  /**
   * Ask the user now. Legacy era: a server-to-client request on `/requests`, awaited. 2026-07-28: the
   * call answers `input_required` and the handler runs again from the top on the retry, where this
   * returns the answer (so keep what comes before it free of side effects, or use resolvers).
   */
  elicit<S extends AnySchema>(message: string, schema: S): Promise<Outcome<Infer<S>>>
  /** Ask the client's model (as {@link RetryableContext.elicit}). */
  sample(params: Parameters<typeof sample>[0]): Promise<SampledMessage>
  /** Ask for the client's roots (as {@link RetryableContext.elicit}). */
  listRoots(): Promise<Root[]>
}

export type ToolContext<S = unknown, R = Record<string, unknown>> = RetryableContext<S, R>

/** The static type of an optional schema. */
export type StateOf<S> = S extends AnySchema ? Infer<S> : unknown

/**
 * How a handler asks for input: hand-rolled, returning {@link inputRequired} with an optional `state`
 * schema, or with `resolvers` that fill `ctx.resolved` first. One or the other, not both.
 */
export interface RetryableOptions<S extends AnySchema | undefined, R extends ResolverMap> {
  /** Schema of the state a hand-rolled handler carries between rounds (sealed; typed as `ctx.requestState`). */
  state?: S
  /** Resolvers whose values the handler receives as `ctx.resolved`, asked of the client as needed. */
  resolvers?: R
}

/** What a tool handler may return: a string (one text block), a result, or `input_required`. */
export type ToolReturn<O, S = unknown> =
  | string
  | {
    content?: ContentBlock[]
    structuredContent?: O
    isError?: boolean
    _meta?: Meta
  }
  | HandRolledInputRequired<S>

export interface ToolDefinition<I extends AnySchema, O extends AnySchema | undefined, S extends AnySchema | undefined = undefined, R extends ResolverMap = {}>
  extends RetryableOptions<S, R> {
  /** 1-128 characters of `A-Z a-z 0-9 _ - .` */
  name: string
  title?: string
  description?: string
  /**
   * Object schema of the arguments: TypeBox (or any JSON Schema wrapped in `Type.Unsafe`), or a
   * Standard JSON Schema such as a zod 4 `z.object({...})`; the handler's arguments are typed from it.
   */
  input?: I
  /** Schema of `structuredContent`; when given, every non-error result is checked against it. */
  output?: O
  /**
   * `false`: `input` and `output` describe the tool (in `tools/list` and the OpenAPI document) but
   * are not checked: the arguments reach the handler as sent, and its results leave as it gave them.
   * For a handler that forwards to a server that is the authority on both (the gateway's). Default true.
   */
  checkSchemas?: boolean
  /**
   * Whether the tool runs as a task (the Tasks extension): `forbidden` (default), `optional` (as a
   * task for clients that declare the extension), `required` (clients that do not get 400 -32021).
   */
  task?: 'forbidden' | 'optional' | 'required'
  /** How long a finished task is kept (default 1 hour; a client may ask for less with `task.ttl`). */
  taskTtlMs?: number
  /** The polling interval suggested to clients (default 1000 ms). */
  pollIntervalMs?: number
  annotations?: ToolAnnotations
  icons?: Tool['icons']
  _meta?: Meta
  /**
   * The MCP App view (SEP-1865) that renders this tool's results: set as `_meta.ui`, beside the rest
   * of `_meta`, e.g. `ui: { resourceUri: 'ui://demo/echo-view' }`. The `ui://` resource must be
   * registered first (`mcp.uiResource`): the registration fails otherwise.
   */
  ui?: UiToolMeta
  /**
   * OAuth scopes a caller's token must all carry (else 403 `insufficient_scope`). Checked only for
   * authenticated principals: without authentication there are no tokens and so no scopes.
   */
  scopes?: readonly string[]
}

export type ToolHandler<I extends AnySchema, O extends AnySchema | undefined, S extends AnySchema | undefined = undefined, R extends ResolverMap = {}> = (
  args: Infer<I>,
  ctx: ToolContext<StateOf<S>, Values<R>> & Partial<TaskContext>
) => MaybePromise<ToolReturn<O extends AnySchema ? InferInput<O> : Record<string, unknown>, StateOf<S>>>

/** A completion provider: suggestions for the value typed so far. At most 100 are sent. */
export type Completer = (
  value: string,
  ctx: RequestContext & { readonly arguments: Readonly<Record<string, string>> }
) => MaybePromise<readonly string[] | { values: readonly string[]; total?: number; hasMore?: boolean }>

export interface PromptArgumentDefinition {
  title?: string
  description?: string
  required?: boolean
  complete?: Completer
}

/**
 * A prompt's arguments: each declared by name, or one object schema (TypeBox, or a Standard JSON
 * Schema such as a zod object) whose properties are the arguments, every one a string schema.
 */
export type PromptArguments = Record<string, PromptArgumentDefinition> | AnySchema

/** The handler's view of the arguments: the schema's type; or required ones are strings, the others may be missing. */
export type PromptArgs<A extends PromptArguments> = A extends AnySchema
  ? Infer<A>
  : { [K in keyof A]: A[K] extends { required: true } ? string : string | undefined }

export interface PromptDefinition<A extends Record<string, PromptArgumentDefinition>, S extends AnySchema | undefined = undefined, R extends ResolverMap = {}>
  extends RetryableOptions<S, R> {
  name: string
  title?: string
  description?: string
  /**
   * The arguments by name, listed by `prompts/list`; or see {@link PromptSchemaDefinition}.
   * @example arguments: { name: { required: true, description: 'Who to greet' } }
   */
  // The intersection keeps completers contextually typed while `A` is inferred from the literal.
  arguments?: A & { [K in keyof A]: PromptArgumentDefinition }
  icons?: Tool['icons']
  _meta?: Meta
}

/**
 * A prompt whose arguments are one object schema: TypeBox, or a Standard JSON Schema such as a zod
 * object. Its properties (string schemas: arguments are strings on the wire) are the arguments
 * `prompts/list` shows (title, description, required from the schema), and the arguments are
 * checked by it (400 -32602 naming the rule) before the handler runs.
 * @example arguments: z.object({ name: z.string().describe('Who to greet'), tone: z.enum(['warm', 'dry']).optional() })
 */
export interface PromptSchemaDefinition<A extends AnySchema, S extends AnySchema | undefined = undefined, R extends ResolverMap = {}>
  extends Omit<PromptDefinition<{}, S, R>, 'arguments'> {
  arguments: A
  /** Completion providers by argument name. */
  complete?: { [K in keyof Infer<A>]?: Completer }
}

export type PromptReturn<S = unknown> = string | PromptMessage[] | Omit<GetPromptResult, 'resultType'> | HandRolledInputRequired<S>

export type PromptHandler<A extends PromptArguments, S extends AnySchema | undefined = undefined, R extends ResolverMap = {}> = (
  args: PromptArgs<A>,
  ctx: RetryableContext<StateOf<S>, Values<R>>
) => MaybePromise<PromptReturn<StateOf<S>>>

/** A resource read: text, bytes, whole contents, or `input_required`; `undefined` means "no such resource". */
export type ResourceReturn<S = unknown> =
  | string
  | Uint8Array
  | { contents: ResourceContents[]; _meta?: Meta; [k: symbol]: unknown }
  | HandRolledInputRequired<S>
  | undefined

export interface ResourceDefinition<S extends AnySchema | undefined = undefined, R extends ResolverMap = {}>
  extends Resource,
  RetryableOptions<S, R> {}

/**
 * An MCP App view (SEP-1865): a `ui://` resource served as `text/html;profile=mcp-app`, with its
 * `_meta.ui` (the origins its CSP may allow, the permissions it asks for, ...) in the listing and in
 * every read's contents.
 */
export interface UiResourceDefinition<S extends AnySchema | undefined = undefined, R extends ResolverMap = {}>
  extends Omit<ResourceDefinition<S, R>, 'mimeType'> {
  ui?: UiResourceMeta
}

export type ResourceHandler<S extends AnySchema | undefined = undefined, R extends ResolverMap = {}> = (
  uri: string,
  ctx: RetryableContext<StateOf<S>, Values<R>>
) => MaybePromise<ResourceReturn<StateOf<S>>>

export interface ResourceTemplateDefinition<S extends AnySchema | undefined = undefined, R extends ResolverMap = {}>
  extends ResourceTemplate,
  RetryableOptions<S, R> {
  /** Completion providers for the template's variables, by variable name. */
  complete?: Record<string, Completer>
}

export type ResourceTemplateHandler<S extends AnySchema | undefined = undefined, R extends ResolverMap = {}> = (
  uri: string,
  variables: Readonly<Record<string, string>>,
  ctx: RetryableContext<StateOf<S>, Values<R>>
) => MaybePromise<ResourceReturn<StateOf<S>>>

/** Returned by every registration: `remove()` takes the entry away at run time. */
export interface Registration {
  remove(): void
}
