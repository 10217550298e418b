import { Type, type TSchema } from '@sinclair/typebox'
import type { Ajv, ValidateFunction } from 'ajv'
import { ConfigurationError } from '../errors.js'
import type { Prompt } from '../schema/prompts.js'
import type { Resource, ResourceTemplate } from '../schema/resources.js'
import type { Tool } from '../schema/tools.js'
import type {
  Completer,
  PromptArgumentDefinition,
  PromptDefinition,
  PromptHandler,
  Registration,
  ResourceDefinition,
  ResourceHandler,
  ResourceTemplateDefinition,
  ResourceTemplateHandler,
  ToolDefinition,
  ToolHandler
} from './definitions.js'
import { plan } from '../mrtr/resolvers.js'
import type { MrtrSpec } from '../mrtr/rounds.js'
import type { ResolverMap } from '../mrtr/resolvers.js'
import { UriTemplate } from './uri-template.js'
import { compile, createValidator } from './validation.js'

export const ListKind = { tools: 'tools', prompts: 'prompts', resources: 'resources', templates: 'templates' } as const
// The value and its type share the name, as STYLE's `as const` enums do.
// eslint-disable-next-line @typescript-eslint/no-redeclare
export type ListKind = (typeof ListKind)[keyof typeof ListKind]

export interface ToolEntry {
  readonly definition: Tool
  /** OAuth scopes a caller must hold (empty: none). */
  readonly scopes: readonly string[]
  readonly validateInput: ValidateFunction
  readonly validateOutput: ValidateFunction | undefined
  readonly handler: ToolHandler<TSchema, TSchema | undefined, TSchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
  readonly task: { mode: 'forbidden' | 'optional' | 'required'; ttlMs: number; pollIntervalMs: number }
}
export interface PromptEntry {
  readonly definition: Prompt
  readonly required: readonly string[]
  readonly completers: ReadonlyMap<string, Completer>
  readonly handler: PromptHandler<Record<string, PromptArgumentDefinition>, TSchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
}
export interface ResourceEntry {
  readonly definition: Resource
  readonly handler: ResourceHandler<TSchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
}
export interface TemplateEntry {
  readonly definition: ResourceTemplate
  readonly template: UriTemplate
  readonly completers: ReadonlyMap<string, Completer>
  readonly handler: ResourceTemplateHandler<TSchema | undefined, ResolverMap>
  readonly mrtr: MrtrSpec
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/
// RFC 6749 scope-token (NQCHAR): safe inside a quoted WWW-Authenticate parameter.
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/**
 * The catalogue: tools, prompts, resources and resource templates. Everything a request needs is
 * prepared here, once, at registration: wire definitions, compiled validators, URI matchers.
 * Every change bumps the list's version and tells the listeners (caches, list_changed notifications).
 */
export class Registry {
  readonly tools = new Map<string, ToolEntry>()
  readonly prompts = new Map<string, PromptEntry>()
  readonly resources = new Map<string, ResourceEntry>()
  readonly templates = new Map<string, TemplateEntry>()
  readonly ajv: Ajv = createValidator()
  readonly #listeners = new Set<(kind: ListKind) => void>()
  // Lists changed while a batch runs: announced once each when it ends.
  #batched: Set<ListKind> | undefined

  /** Subscribe to catalogue changes; returns the unsubscribe function. */
  onChange(listener: (kind: ListKind) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  protected changed(kind: ListKind): void {
    if (this.#batched !== undefined) {
      this.#batched.add(kind)
      return
    }
    for (const l of this.#listeners) l(kind)
  }

  /**
   * Make several registrations and removals as one change: each list touched is announced once,
   * when `fn` returns; not nested (a gateway replacing a whole list when its upstream says `list_changed`).
   * @example mcp.batch(() => { for (const r of old) r.remove(); for (const t of tools) mcp.tool(t, handler) })
   */
  batch(fn: () => void): void {
    const batched = (this.#batched = new Set())
    try {
      fn()
    } finally {
      this.#batched = undefined
      for (const kind of batched) this.changed(kind)
    }
  }

  /**
   * Register a tool. Its arguments are typed from the TypeBox `input` schema and validated before the
   * handler runs; `output`, when given, types and validates `structuredContent`.
   * @example
   * mcp.tool({ name: 'add', input: Type.Object({ a: Type.Number(), b: Type.Number() }) },
   *   ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }))
   */
  tool<
    I extends TSchema = ReturnType<typeof Type.Object<{}>>,
    O extends TSchema | undefined = undefined,
    S extends TSchema | undefined = undefined,
    const R extends ResolverMap = {}
  >(def: ToolDefinition<I, O, S, R>, handler: ToolHandler<I, O, S, R>): Registration {
    if (!TOOL_NAME.test(def.name)) throw new ConfigurationError(`Tool name "${def.name}" must match ${TOOL_NAME}`)
    if (this.tools.has(def.name)) throw new ConfigurationError(`Tool "${def.name}" is already registered`)
    const scopes = Object.freeze([...new Set(def.scopes ?? [])])
    const badScope = scopes.find((s) => !SCOPE.test(s))
    if (badScope !== undefined) throw new ConfigurationError(`Tool "${def.name}": "${badScope}" is not an OAuth scope token`)
    const input = (def.input ?? Type.Object({})) as TSchema
    if (input.type !== 'object') throw new ConfigurationError(`Tool "${def.name}": input must be an object schema`)
    if (def.output !== undefined && (def.output as TSchema).type !== 'object') {
      throw new ConfigurationError(`Tool "${def.name}": output must be an object schema`)
    }
    const definition: Tool = stripUndefined({
      name: def.name,
      title: def.title,
      description: def.description,
      inputSchema: plainSchema(input),
      outputSchema: def.output === undefined ? undefined : plainSchema(def.output),
      annotations: def.annotations,
      icons: def.icons,
      _meta: def._meta,
      execution: def.task === undefined ? undefined : { taskSupport: def.task }
    })
    const entry: ToolEntry = {
      definition,
      scopes,
      validateInput: compile(this.ajv, definition.inputSchema, `Tool "${def.name}" input`),
      validateOutput:
        definition.outputSchema === undefined ? undefined : compile(this.ajv, definition.outputSchema, `Tool "${def.name}" output`),
      handler: handler as unknown as ToolEntry['handler'],
      mrtr: this.#mrtr(`Tool "${def.name}"`, def, Object.keys((input as { properties?: object }).properties ?? {})),
      task: { mode: def.task ?? 'forbidden', ttlMs: def.taskTtlMs ?? 3_600_000, pollIntervalMs: def.pollIntervalMs ?? 1000 }
    }
    return this.#add(this.tools, def.name, entry, ListKind.tools)
  }

  /**
   * Register a prompt. Arguments are declared as an object so the handler gets them typed; each may
   * carry a completion provider.
   * @example
   * mcp.prompt({ name: 'greeting', arguments: { name: { required: true } } }, ({ name }) => `Say hello to ${name}`)
   */
  prompt<
    const A extends Record<string, PromptArgumentDefinition> = {},
    S extends TSchema | undefined = undefined,
    const R extends ResolverMap = {}
  >(def: PromptDefinition<A, S, R>, handler: PromptHandler<A, S, R>): Registration {
    if (def.name === '' || def.name.length > 128) throw new ConfigurationError('Prompt name must be 1-128 characters')
    if (this.prompts.has(def.name)) throw new ConfigurationError(`Prompt "${def.name}" is already registered`)
    const args = Object.entries(def.arguments ?? {}) as [string, PromptArgumentDefinition][]
    const definition: Prompt = stripUndefined({
      name: def.name,
      title: def.title,
      description: def.description,
      arguments:
        args.length === 0
          ? undefined
          : args.map(([name, a]) => stripUndefined({ name, title: a.title, description: a.description, required: a.required })),
      icons: def.icons,
      _meta: def._meta
    })
    const entry: PromptEntry = {
      definition,
      required: args.filter(([, a]) => a.required === true).map(([n]) => n),
      completers: new Map(args.flatMap(([n, a]) => (a.complete === undefined ? [] : [[n, a.complete] as const]))),
      handler: handler as unknown as PromptEntry['handler'],
      mrtr: this.#mrtr(`Prompt "${def.name}"`, def, args.map(([n]) => n))
    }
    return this.#add(this.prompts, def.name, entry, ListKind.prompts)
  }

  /** Register a concrete resource, listed by `GET /resources` and read by `GET /resources/{uri}`. */
  resource<S extends TSchema | undefined = undefined, const R extends ResolverMap = {}>(
    def: ResourceDefinition<S, R>,
    handler: ResourceHandler<S, R>
  ): Registration {
    assertUri(def.uri)
    if (this.resources.has(def.uri)) throw new ConfigurationError(`Resource "${def.uri}" is already registered`)
    const { state: _state, resolvers: _resolvers, ...wire } = def
    const entry: ResourceEntry = {
      definition: stripUndefined(wire),
      handler: handler as unknown as ResourceEntry['handler'],
      mrtr: this.#mrtr(`Resource "${def.uri}"`, def, [])
    }
    return this.#add(this.resources, def.uri, entry, ListKind.resources)
  }

  /**
   * Register a resource template (RFC 6570 `{var}` and `{+var}`); reads of matching URIs reach the
   * handler with the variables decoded.
   * @example
   * mcp.resourceTemplate({ uriTemplate: 'demo://items/{id}', name: 'item' }, (uri, { id }) => `Item ${id}`)
   */
  resourceTemplate<S extends TSchema | undefined = undefined, const R extends ResolverMap = {}>(
    def: ResourceTemplateDefinition<S, R>,
    handler: ResourceTemplateHandler<S, R>
  ): Registration {
    if (this.templates.has(def.uriTemplate)) throw new ConfigurationError(`Template "${def.uriTemplate}" is already registered`)
    const template = new UriTemplate(def.uriTemplate)
    const { complete, state: _state, resolvers: _resolvers, ...wire } = def
    const completers = new Map<string, Completer>()
    for (const [name, fn] of Object.entries(complete ?? {})) {
      if (!template.variables.includes(name)) {
        throw new ConfigurationError(`Template "${def.uriTemplate}": completer for unknown variable "${name}"`)
      }
      completers.set(name, fn)
    }
    const entry: TemplateEntry = {
      definition: stripUndefined(wire),
      template,
      completers,
      handler: handler as unknown as TemplateEntry['handler'],
      mrtr: this.#mrtr(`Template "${def.uriTemplate}"`, def, template.variables)
    }
    return this.#add(this.templates, def.uriTemplate, entry, ListKind.templates)
  }

  /** Check and prepare how an entry asks for input: resolvers or a hand-rolled state, not both. */
  #mrtr(owner: string, def: { state?: TSchema | undefined; resolvers?: ResolverMap | undefined }, argumentNames: readonly string[]): MrtrSpec {
    if (def.state !== undefined && def.resolvers !== undefined) {
      throw new ConfigurationError(`${owner}: resolvers and a hand-rolled state cannot be mixed (one input channel per call)`)
    }
    return {
      plan: def.resolvers === undefined ? undefined : plan(owner, def.resolvers, argumentNames),
      validateState: def.state === undefined ? undefined : compile(this.ajv, plainSchema(def.state), `${owner} state`)
    }
  }

  #add<E>(map: Map<string, E>, key: string, entry: E, kind: ListKind): Registration {
    map.set(key, entry)
    this.changed(kind)
    let removed = false
    return {
      remove: () => {
        if (removed || map.get(key) !== entry) return
        removed = true
        map.delete(key)
        this.changed(kind)
      }
    }
  }
}

/** A TypeBox schema as plain JSON Schema (TypeBox marks its schemas with symbol keys JSON drops). */
function plainSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
}

function stripUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k]
  return o
}

function assertUri(uri: string): void {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri)) throw new ConfigurationError(`Resource URI "${uri}" must be absolute`)
}
