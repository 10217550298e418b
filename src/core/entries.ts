/** What the registry keeps of each registration: the wire definition and what was prepared for requests. */
import type { ValidateFunction } from 'ajv'
import type { MrtrSpec } from '../mrtr/rounds.js'
import type { ResolverMap } from '../mrtr/resolvers.js'
import type { Prompt } from '../schema/prompts.js'
import type { Resource, ResourceTemplate } from '../schema/resources.js'
import type { Tool } from '../schema/tools.js'
import type { Completer, PromptArgumentDefinition, PromptHandler, ResourceHandler, ResourceTemplateHandler, ToolHandler } from './definitions.js'
import type { AnySchema } from './standard-schema.js'
import type { UriTemplate } from './uri-template.js'

export interface ToolEntry {
  readonly definition: Tool
  /** OAuth scopes a caller must hold (empty: none). */
  readonly scopes: readonly string[]
  readonly validateInput: ValidateFunction
  readonly validateOutput: ValidateFunction | undefined
  readonly handler: ToolHandler<AnySchema, AnySchema | undefined, AnySchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
  readonly task: { mode: 'forbidden' | 'optional' | 'required'; ttlMs: number; pollIntervalMs: number }
}
export interface PromptEntry {
  readonly definition: Prompt
  readonly required: readonly string[]
  readonly completers: ReadonlyMap<string, Completer>
  /** The arguments' schema, when they were declared by one (checked after `required`). */
  readonly validateArguments: ValidateFunction | undefined
  readonly handler: PromptHandler<Record<string, PromptArgumentDefinition>, AnySchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
}
export interface ResourceEntry {
  readonly definition: Resource
  readonly handler: ResourceHandler<AnySchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
}
export interface TemplateEntry {
  readonly definition: ResourceTemplate
  readonly template: UriTemplate
  readonly completers: ReadonlyMap<string, Completer>
  readonly handler: ResourceTemplateHandler<AnySchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
}
