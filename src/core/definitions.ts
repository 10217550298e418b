import type { Static, TSchema } from '@sinclair/typebox'
import type { Meta } from '../schema/common.js'
import type { ContentBlock, ResourceContents } from '../schema/content.js'
import type { InputRequiredResult, InputResponses } from '../schema/mrtr.js'
import type { GetPromptResult, PromptMessage } from '../schema/prompts.js'
import type { Resource, ResourceTemplate } from '../schema/resources.js'
import type { Tool, ToolAnnotations } from '../schema/tools.js'
import type { RequestContext } from './context.js'

type MaybePromise<T> = T | Promise<T>

/** The context of a request that may be retried with input (tools/call, prompts/get, resources/read). */
export interface RetryableContext extends RequestContext {
  /** Answers to the `inputRequests` of a previous `input_required` result, by key. */
  readonly inputResponses: InputResponses | undefined
  /** The `requestState` the client echoed (already verified when sealed state is in use). */
  readonly requestState: string | undefined
}

export type ToolContext = RetryableContext

/** What a tool handler may return: a string (one text block), a result, or `input_required`. */
export type ToolReturn<O> =
  | string
  | {
      content?: ContentBlock[]
      structuredContent?: O
      isError?: boolean
      _meta?: Meta
    }
  | InputRequiredResult

export interface ToolDefinition<I extends TSchema, O extends TSchema | undefined> {
  /** 1-128 characters of `A-Z a-z 0-9 _ - .` */
  name: string
  title?: string
  description?: string
  /** TypeBox (or any JSON Schema wrapped in `Type.Unsafe`) object schema of the arguments. */
  input?: I
  /** Schema of `structuredContent`; when given, every non-error result is checked against it. */
  output?: O
  annotations?: ToolAnnotations
  icons?: Tool['icons']
  _meta?: Meta
  /**
   * OAuth scopes a caller's token must all carry (else 403 `insufficient_scope`). Checked only for
   * authenticated principals: without authentication there are no tokens and so no scopes.
   */
  scopes?: readonly string[]
}

export type ToolHandler<I extends TSchema, O extends TSchema | undefined> = (
  args: Static<I>,
  ctx: ToolContext
) => MaybePromise<ToolReturn<O extends TSchema ? Static<O> : Record<string, unknown>>>

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

/** The handler's view of the arguments: required ones are strings, the others may be missing. */
export type PromptArgs<A extends Record<string, PromptArgumentDefinition>> = {
  [K in keyof A]: A[K] extends { required: true } ? string : string | undefined
}

export interface PromptDefinition<A extends Record<string, PromptArgumentDefinition>> {
  name: string
  title?: string
  description?: string
  // The intersection keeps completers contextually typed while `A` is inferred from the literal.
  arguments?: A & { [K in keyof A]: PromptArgumentDefinition }
  icons?: Tool['icons']
  _meta?: Meta
}

export type PromptReturn = string | PromptMessage[] | (Omit<GetPromptResult, 'resultType'>) | InputRequiredResult

export type PromptHandler<A extends Record<string, PromptArgumentDefinition>> = (
  args: PromptArgs<A>,
  ctx: RetryableContext
) => MaybePromise<PromptReturn>

/** A resource read: text, bytes, whole contents, or `input_required`; `undefined` means "no such resource". */
export type ResourceReturn =
  | string
  | Uint8Array
  | { contents: ResourceContents[]; _meta?: Meta }
  | InputRequiredResult
  | undefined

export type ResourceDefinition = Resource

export type ResourceHandler = (uri: string, ctx: RetryableContext) => MaybePromise<ResourceReturn>

export interface ResourceTemplateDefinition extends ResourceTemplate {
  /** Completion providers for the template's variables, by variable name. */
  complete?: Record<string, Completer>
}

export type ResourceTemplateHandler = (
  uri: string,
  variables: Readonly<Record<string, string>>,
  ctx: RetryableContext
) => MaybePromise<ResourceReturn>

/** Returned by every registration: `remove()` takes the entry away at run time. */
export interface Registration {
  remove(): void
}
