// Past ~8 KB on purpose: one registration method per kind (tool, prompt, resource, template), each
// preparing everything a request needs at registration; the checks they share are in definition-checks.ts.
import { Type } from '@sinclair/typebox'
import type { Ajv } from 'ajv'
import { ConfigurationError } from '../errors.js'
import type { Prompt } from '../schema/prompts.js'
import type { Tool } from '../schema/tools.js'
import type {
  Completer,
  PromptArgumentDefinition,
  PromptArguments,
  PromptSchemaDefinition,
  PromptDefinition,
  PromptHandler,
  Registration,
  ResourceDefinition,
  ResourceHandler,
  ResourceTemplateDefinition,
  ResourceTemplateHandler,
  ToolDefinition,
  ToolHandler,
  UiResourceDefinition
} from './definitions.js'
import { UI_MIME_TYPE, assertUiUri, checkUiResourceMeta, linkToolUi } from './apps.js'
import { isThenable } from './maybe-promise.js'
import type { PromptEntry, ResourceEntry, TemplateEntry, ToolEntry } from './entries.js'
import type { ResolverMap } from '../mrtr/resolvers.js'
import { assertToolName, assertUri, mrtrSpec, promptArguments, stripUndefined, toolScopes } from './definition-checks.js'
import { compileSchema, jsonSchemaOf, type AnySchema } from './standard-schema.js'
import { UriTemplate } from './uri-template.js'
import { createValidator } from './validation.js'

export type { PromptEntry, ResourceEntry, TemplateEntry, ToolEntry } from './entries.js'

/** The input check of a tool registered with `checkSchemas: false`: every argument object passes. */
const ANY_ARGUMENTS = Object.assign(() => true, { errors: null }) as unknown as ToolEntry['validateInput']

export const ListKind = { tools: 'tools', prompts: 'prompts', resources: 'resources', templates: 'templates' } as const
// The value and its type share the name, as STYLE's `as const` enums do.
// eslint-disable-next-line @typescript-eslint/no-redeclare
export type ListKind = (typeof ListKind)[keyof typeof ListKind]

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
   * Register a tool. Its arguments are typed from the `input` schema (TypeBox, or a Standard JSON
   * Schema such as zod 4's) and validated before the handler runs; `output`, when given, types and
   * validates `structuredContent`.
   * @example
   * mcp.tool({ name: 'add', input: Type.Object({ a: Type.Number(), b: Type.Number() }) },
   *   ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }))
   * mcp.tool({ name: 'add', input: z.object({ a: z.number(), b: z.number() }) }, ({ a, b }) => String(a + b))
   */
  tool<
    I extends AnySchema = ReturnType<typeof Type.Object<{}>>,
    O extends AnySchema | undefined = undefined,
    S extends AnySchema | undefined = undefined,
    const R extends ResolverMap = {}
  >(def: ToolDefinition<I, O, S, R>, handler: ToolHandler<I, O, S, R>): Registration {
    assertToolName(def.name)
    if (this.tools.has(def.name)) throw new ConfigurationError(`Tool "${def.name}" is already registered`)
    // The view is checked here, not in toolEntry: a gateway's unlisted call has no catalogue to check against.
    const linked = def.ui === undefined ? def : { ...def, _meta: linkToolUi(`Tool "${def.name}"`, def._meta, def.ui, (uri) => this.servesResource(uri)) }
    return this.#add(this.tools, def.name, this.toolEntry(linked, handler), ListKind.tools)
  }

  /**
   * What `tools/call` runs for a name the catalogue does not list: an entry made for that call
   * (see {@link toolEntry}), or undefined, the default: 404 on REST, -32602 on /mcp. A gateway
   * forwards such a call for its upstream to answer, as the upstream would answer it directly.
   */
  unlistedTool: ((name: string) => ToolEntry | undefined) | undefined

  /**
   * A tool's entry as {@link tool} makes it, not registered (nor its name checked: an unlisted
   * call's name is its server's business): for {@link unlistedTool}.
   */
  toolEntry<
    I extends AnySchema = ReturnType<typeof Type.Object<{}>>,
    O extends AnySchema | undefined = undefined,
    S extends AnySchema | undefined = undefined,
    const R extends ResolverMap = {}
  >(def: ToolDefinition<I, O, S, R>, handler: ToolHandler<I, O, S, R>): ToolEntry {
    const scopes = toolScopes(def.name, def.scopes)
    const owner = `Tool "${def.name}"`
    const inputSchema = def.input ?? Type.Object({})
    const input = jsonSchemaOf(inputSchema, `${owner} input`)
    if (input.type !== 'object') throw new ConfigurationError(`${owner}: input must be an object schema`)
    const output = def.output === undefined ? undefined : jsonSchemaOf(def.output, `${owner} output`)
    if (output !== undefined && output.type !== 'object') throw new ConfigurationError(`${owner}: output must be an object schema`)
    const definition: Tool = stripUndefined({
      name: def.name,
      title: def.title,
      description: def.description,
      inputSchema: input,
      outputSchema: output,
      annotations: def.annotations,
      icons: def.icons,
      _meta: def._meta,
      execution: def.task === undefined ? undefined : { taskSupport: def.task }
    })
    const entry: ToolEntry = {
      definition,
      scopes,
      validateInput: def.checkSchemas === false ? ANY_ARGUMENTS : compileSchema(this.ajv, inputSchema, input, `${owner} input`),
      validateOutput: output === undefined || def.checkSchemas === false ? undefined : compileSchema(this.ajv, def.output!, output, `${owner} output`),
      handler: handler as unknown as ToolEntry['handler'],
      mrtr: mrtrSpec(this.ajv, owner, def, Object.keys((input.properties as object | undefined) ?? {})),
      task: { mode: def.task ?? 'forbidden', ttlMs: def.taskTtlMs ?? 3_600_000, pollIntervalMs: def.pollIntervalMs ?? 1000 }
    }
    return entry
  }

  /**
   * Register a prompt. Arguments are declared as an object so the handler gets them typed; each may
   * carry a completion provider. Or as one object schema (TypeBox, zod...): see {@link PromptSchemaDefinition}.
   * @example
   * mcp.prompt({ name: 'greeting', arguments: { name: { required: true } } }, ({ name }) => `Say hello to ${name}`)
   * mcp.prompt({ name: 'greeting', arguments: z.object({ name: z.string() }) }, ({ name }) => `Say hello to ${name}`)
   */
  prompt<
    const A extends Record<string, PromptArgumentDefinition> = {},
    S extends AnySchema | undefined = undefined,
    const R extends ResolverMap = {}
  >(def: PromptDefinition<A, S, R>, handler: PromptHandler<A, S, R>): Registration
  prompt<A extends AnySchema, S extends AnySchema | undefined = undefined, const R extends ResolverMap = {}>(
    def: PromptSchemaDefinition<A, S, R>,
    handler: PromptHandler<A, S, R>
  ): Registration
  prompt(def: PromptDefinition<{}> & { arguments?: PromptArguments; complete?: Record<string, Completer | undefined> }, handler: unknown): Registration {
    if (def.name === '' || def.name.length > 128) throw new ConfigurationError('Prompt name must be 1-128 characters')
    if (this.prompts.has(def.name)) throw new ConfigurationError(`Prompt "${def.name}" is already registered`)
    return this.#add(this.prompts, def.name, this.promptEntry(def, handler), ListKind.prompts)
  }

  /**
   * What `prompts/get` runs for a name the catalogue does not list: an entry made for that get (see
   * {@link promptEntry}), or undefined, the default: 404. A gateway forwards it, for its upstream to
   * answer as it would directly.
   */
  unlistedPrompt: ((name: string) => PromptEntry | undefined) | undefined

  /** A prompt's entry as {@link prompt} makes it, not registered (nor its name checked): for {@link unlistedPrompt}. */
  promptEntry(def: PromptDefinition<{}> & { arguments?: PromptArguments; complete?: Record<string, Completer | undefined> }, handler: unknown): PromptEntry {
    const owner = `Prompt "${def.name}"`
    const args = promptArguments(this.ajv, owner, def.arguments, def.complete)
    const definition: Prompt = stripUndefined({
      name: def.name,
      title: def.title,
      description: def.description,
      arguments: args.list.length === 0 ? undefined : args.list,
      icons: def.icons,
      _meta: def._meta
    })
    const entry: PromptEntry = {
      definition,
      required: args.required,
      completers: args.completers,
      validateArguments: args.validate,
      handler: handler as unknown as PromptEntry['handler'],
      mrtr: mrtrSpec(this.ajv, owner, def, args.list.map((a) => a.name))
    }
    return entry
  }

  /** Register a concrete resource, listed by `GET /resources` and read by `GET /resources/{uri}`. */
  resource<S extends AnySchema | undefined = undefined, const R extends ResolverMap = {}>(
    def: ResourceDefinition<S, R>,
    handler: ResourceHandler<S, R>
  ): Registration {
    assertUri(def.uri)
    if (this.resources.has(def.uri)) throw new ConfigurationError(`Resource "${def.uri}" is already registered`)
    return this.#add(this.resources, def.uri, this.resourceEntry(def, handler), ListKind.resources)
  }

  /**
   * Register an MCP App view (SEP-1865): a `ui://` resource of MIME type `text/html;profile=mcp-app`
   * whose `_meta.ui` (checked here: CSP origins, permissions, domain, prefersBorder) is in its
   * listing and in the contents of every read. `html` is the page, or a handler that returns it
   * (a string, or whole contents, sent as they are). Link a tool to it with the tool's `ui`.
   * @example
   * mcp.uiResource({ uri: 'ui://demo/echo-view', name: 'echo-view', ui: { prefersBorder: true } }, '<!doctype html>...')
   * mcp.tool({ name: 'show', input: Type.Object({ text: Type.String() }), ui: { resourceUri: 'ui://demo/echo-view' } }, ({ text }) => text)
   */
  uiResource<S extends AnySchema | undefined = undefined, const R extends ResolverMap = {}>(
    def: UiResourceDefinition<S, R>,
    html: string | ResourceHandler<S, R>
  ): Registration {
    const owner = `View "${def.uri}"`
    assertUiUri(owner, def.uri)
    if ('mimeType' in def) throw new ConfigurationError(`${owner}: a view's mimeType is always ${UI_MIME_TYPE}`)
    const { ui: declared, ...rest } = def
    const ui = checkUiResourceMeta(owner, declared ?? {})
    const contentMeta = Object.keys(ui).length === 0 ? undefined : { ui }
    const wrap = (uri: string, out: unknown): unknown => {
      let content: Record<string, unknown>
      if (typeof out === 'string') content = { uri, mimeType: UI_MIME_TYPE, text: out }
      else if (out instanceof Uint8Array) content = { uri, mimeType: UI_MIME_TYPE, blob: Buffer.from(out).toString('base64') }
      else return out
      if (contentMeta !== undefined) content._meta = structuredClone(contentMeta)
      return { contents: [content] }
    }
    const handler = (uri: string, ctx: Parameters<ResourceHandler<S, R>>[1]): unknown => {
      const out = typeof html === 'string' ? html : html(uri, ctx)
      return isThenable(out) ? Promise.resolve(out).then((o) => wrap(uri, o)) : wrap(uri, out)
    }
    const resource = { ...rest, mimeType: UI_MIME_TYPE, _meta: contentMeta === undefined ? rest._meta : { ...rest._meta, ...contentMeta } } as ResourceDefinition<S, R>
    return this.resource(resource, handler as unknown as ResourceHandler<S, R>)
  }

  /** Whether `uri` names a registered resource or matches a template. */
  servesResource(uri: string): boolean {
    return this.resources.has(uri) || [...this.templates.values()].some((t) => t.template.match(uri) !== undefined)
  }

  /**
   * What `resources/read` runs for a URI that no resource or template serves: an entry made for that
   * read (see {@link resourceEntry}), or undefined, the default: not found. A gateway forwards such a
   * read for its upstream to answer (servers often serve URIs they do not list).
   */
  unlistedResource: ((uri: string) => ResourceEntry | undefined) | undefined

  /** A resource's entry as {@link resource} makes it, not registered (nor its URI checked): for {@link unlistedResource}. */
  resourceEntry<S extends AnySchema | undefined = undefined, const R extends ResolverMap = {}>(
    def: ResourceDefinition<S, R>,
    handler: ResourceHandler<S, R>
  ): ResourceEntry {
    const { state: _state, resolvers: _resolvers, ...wire } = def
    return {
      definition: stripUndefined(wire),
      handler: handler as unknown as ResourceEntry['handler'],
      mrtr: mrtrSpec(this.ajv, `Resource "${def.uri}"`, def, [])
    }
  }

  /**
   * Register a resource template (RFC 6570 `{var}` and `{+var}`); reads of matching URIs reach the
   * handler with the variables decoded.
   * @example
   * mcp.resourceTemplate({ uriTemplate: 'demo://items/{id}', name: 'item' }, (uri, { id }) => `Item ${id}`)
   */
  resourceTemplate<S extends AnySchema | undefined = undefined, const R extends ResolverMap = {}>(
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
      mrtr: mrtrSpec(this.ajv, `Template "${def.uriTemplate}"`, def, template.variables)
    }
    return this.#add(this.templates, def.uriTemplate, entry, ListKind.templates)
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
