import type { TSchema } from '@sinclair/typebox'
import type { RequestContext } from '../core/request-context.js'
import type { Completer, PromptArgumentDefinition, Registration, RetryableContext } from '../core/definitions.js'
import type { McpServer } from '../core/mcp-server.js'
import type { ListKind, PromptEntry, ResourceEntry, ToolEntry } from '../core/registry.js'
import { inputRequired } from '../mrtr/rounds.js'
import type { InputRequest } from '../schema/mrtr.js'
import type { Outcome, RoundRef, UpstreamCall } from './call.js'
import type { Progress } from './upstream.js'

/** What a catalogue entry's handler needs of the gateway: the rounds of an upstream request. */
export interface Forwarder {
  /** Run `method` upstream for `ctx` (a first call, or a retry naming its round) to its next outcome. */
  forward(ctx: RetryableContext, method: string, params: Record<string, unknown>): Promise<unknown>
  /** `completion/complete` upstream; undefined when the upstream does not complete. */
  completer(ref: Record<string, string>, argument: string): Completer | undefined
}

type Item = Record<string, unknown> & { name?: string; uri?: string; uriTemplate?: string }

/** What the gateway's own configuration adds to an upstream's tool (a virtual server's `scopes`). */
export interface GatewayOptions {
  scopes?: readonly string[]
}

/**
 * Register one upstream list entry into `mcp` with a handler that forwards to the upstream; what
 * this library cannot serve (a name it refuses, a schema that is not an object schema, a URI template
 * beyond `{var}`/`{+var}`) is left out with the reason, never half-registered.
 */
export function register(mcp: McpServer, kind: ListKind, item: Item, fw: Forwarder, ours: GatewayOptions = {}): Registration {
  switch (kind) {
    case 'tools': {
      // `ui` is not a wire field but our link to a view (checked against this catalogue): an upstream's
      // view link travels in its `_meta.ui`, as it is.
      const { name, inputSchema, outputSchema } = item as Item & { name: string }
      // The upstream is the authority on its arguments and results: its schemas describe the tool
      // here (tools/list, OpenAPI) and the upstream judges the call, as it would called directly.
      return mcp.tool(
        { ...wireOnly(item, TOOL_FIELDS), ...ours, name, input: inputSchema as TSchema, output: outputSchema as TSchema | undefined, checkSchemas: false },
        (args, ctx) => fw.forward(ctx, 'tools/call', { name, arguments: args }) as never
      )
    }
    case 'prompts': {
      const { name, arguments: declared } = item as Item & { name: string; arguments?: (PromptArgumentDefinition & { name: string })[] }
      const args: Record<string, PromptArgumentDefinition> = {}
      for (const declaredArg of declared ?? []) {
        const arg = declaredArg.name
        const a = wireOnly(declaredArg as unknown as Item, ARGUMENT_FIELDS) as PromptArgumentDefinition
        const complete = fw.completer({ type: 'ref/prompt', name }, arg)
        args[arg] = complete === undefined ? a : { ...a, complete }
      }
      return mcp.prompt({ ...wireOnly(item, PROMPT_FIELDS), name, arguments: args }, (given, ctx) => {
        const present = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined))
        return fw.forward(ctx, 'prompts/get', { name, arguments: present }) as never
      })
    }
    case 'resources':
      return mcp.resource(withoutOurs(item) as Item & { uri: string; name: string }, (uri, ctx) => fw.forward(ctx, 'resources/read', { uri }) as never)
    case 'templates': {
      const def = withoutOurs(item) as Item & { uriTemplate: string; name: string }
      const complete: Record<string, Completer> = {}
      for (const m of def.uriTemplate.matchAll(/\{\+?([A-Za-z0-9_.%]+)\}/g)) {
        const c = fw.completer({ type: 'ref/resource', uri: def.uriTemplate }, m[1]!)
        if (c !== undefined) complete[m[1]!] = c
      }
      return mcp.resourceTemplate({ ...def, complete }, (uri, _vars, ctx) => fw.forward(ctx, 'resources/read', { uri }) as never)
    }
  }
}

// What an upstream's list entry may set: the fields of the wire definition. Our registration options
// (`task`, `scopes`, `resolvers`, `state`, `ui`, ...) are this gateway's to set, never an upstream's:
// a hostile one could otherwise make a tool task-only, scoped, or asking questions of its own.
const TOOL_FIELDS = ['title', 'description', 'annotations', 'icons', '_meta'] as const
const PROMPT_FIELDS = ['title', 'description', 'icons', '_meta'] as const
const ARGUMENT_FIELDS = ['title', 'description', 'required'] as const
/** Registration options of a resource or template that are not wire fields. */
const OURS = new Set(['state', 'resolvers', 'complete', 'scopes', 'task', 'taskTtlMs', 'pollIntervalMs', 'checkSchemas', 'ui', 'input', 'output', 'arguments'])

function wireOnly(item: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of fields) if (Object.hasOwn(item, f)) out[f] = item[f]
  return out
}

/** A resource's or template's fields, less our registration options (the registry keeps the rest as they are). */
function withoutOurs(item: Item): Item {
  return Object.fromEntries(Object.entries(item).filter(([k]) => !OURS.has(k))) as Item
}

/**
 * `tools/call` of a name the upstream did not list (or not yet: its list may lag): forwarded all the
 * same, so that the caller gets what the upstream answers (for a name it does not know, its own
 * "unknown tool" result or error), as called directly; see `McpServer.unlistedTool`.
 */
export function unlistedTool(mcp: McpServer, fw: Forwarder): (name: string) => ToolEntry {
  return (name) => mcp.toolEntry({ name, checkSchemas: false }, (args, ctx) => fw.forward(ctx, 'tools/call', { name, arguments: args }) as never)
}

/**
 * `prompts/get` of a name the upstream did not list: forwarded with the arguments as given, for the
 * upstream to answer (its own "prompt not found" error) as called directly.
 */
export function unlistedPrompt(mcp: McpServer, fw: Forwarder): (name: string) => PromptEntry {
  return (name) => mcp.promptEntry({ name }, (given: Record<string, unknown>, ctx: RetryableContext) => fw.forward(ctx, 'prompts/get', { name, arguments: given }))
}

/**
 * `resources/read` of a URI no listed resource or template serves (a template beyond `{var}`, a URI
 * the upstream serves but does not list): forwarded, for the upstream to read or refuse in its words.
 */
export function unlistedResource(mcp: McpServer, fw: Forwarder): (uri: string) => ResourceEntry {
  return (uri) => mcp.resourceEntry({ uri, name: uri }, (u, ctx) => fw.forward(ctx, 'resources/read', { uri: u }) as never)
}

/**
 * A handler's answer from an outcome: the upstream's result as is, or the questions of the round
 * as `input_required`, the round's reference carried (sealed by the core) to the retry.
 */
export function handlerReturn(outcome: Exclude<Outcome, { kind: 'error' }>): unknown {
  if (outcome.kind === 'done') return outcome.result
  return inputRequired<RoundRef>({ inputRequests: outcome.requests as Record<string, InputRequest>, state: outcome.ref })
}

/** Progress of the upstream request, reported to whoever waits on the call now. */
export function progressOf(call: UpstreamCall): (p: Progress) => void {
  return (p) => void call.ctx?.progress(p.progress, p.total, p.message).catch(() => undefined)
}

/** The `notifications/message` of an upstream, to the caller it belongs to. */
export function relayLog(ctx: RequestContext, params: Record<string, unknown>): void {
  const logger = typeof params.logger === 'string' ? params.logger : undefined
  void ctx.sendLog(params.level as never, params.data, logger).catch(() => undefined)
}
