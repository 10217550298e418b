/** Small checks and clean-ups of what a registration passes. */
import { Kind } from '@sinclair/typebox'
import type { Ajv, ValidateFunction } from 'ajv'
import { ConfigurationError } from '../errors.js'
import { plan, type ResolverMap } from '../mrtr/resolvers.js'
import type { MrtrSpec } from '../mrtr/rounds.js'
import type { Prompt } from '../schema/prompts.js'
import type { Completer, PromptArgumentDefinition, PromptArguments } from './definitions.js'
import { compileSchema, isStandard, jsonSchemaOf, type AnySchema } from './standard-schema.js'

export function stripUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k]
  return o
}

export function assertUri(uri: string): void {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri)) throw new ConfigurationError(`Resource URI "${uri}" must be absolute`)
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/
// RFC 6749 scope-token (NQCHAR): safe inside a quoted WWW-Authenticate parameter.
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+$/

export function assertToolName(name: string): void {
  if (!TOOL_NAME.test(name)) throw new ConfigurationError(`Tool name "${name}" must match ${TOOL_NAME}`)
}

export const OFFLINE_ACCESS = 'offline_access'

/** A tool's scopes, each checked, without duplicates. */
export function toolScopes(name: string, scopes: readonly string[] | undefined): readonly string[] {
  const unique = Object.freeze([...new Set(scopes ?? [])])
  const bad = unique.find((s) => !SCOPE.test(s))
  if (bad !== undefined) throw new ConfigurationError(`Tool "${name}": "${bad}" is not an OAuth scope token`)
  // MCP 2026-07-28: a protected resource does not ask for offline_access (in a challenge or its
  // metadata): refresh tokens are the client's business, not a requirement of the resource.
  if (unique.includes(OFFLINE_ACCESS)) throw new ConfigurationError(`Tool "${name}": ${OFFLINE_ACCESS} is not a resource's scope (refresh tokens are the client's to ask for)`)
  return unique
}

/** Check and prepare how an entry asks for input: resolvers or a hand-rolled state, not both. */
export function mrtrSpec(ajv: Ajv, owner: string, def: { state?: AnySchema | undefined; resolvers?: ResolverMap | undefined }, argumentNames: readonly string[]): MrtrSpec {
  if (def.state !== undefined && def.resolvers !== undefined) {
    throw new ConfigurationError(`${owner}: resolvers and a hand-rolled state cannot be mixed (one input channel per call)`)
  }
  return {
    plan: def.resolvers === undefined ? undefined : plan(owner, def.resolvers, argumentNames),
    validateState: def.state === undefined ? undefined : compileSchema(ajv, def.state, jsonSchemaOf(def.state, `${owner} state`), `${owner} state`)
  }
}

/** What a registration makes of a prompt's arguments, in either form. */
export interface PreparedArguments {
  list: NonNullable<Prompt['arguments']>
  required: string[]
  completers: Map<string, Completer>
  validate: ValidateFunction | undefined
}

/**
 * A prompt's arguments, declared by name or by one object schema whose properties (string schemas:
 * arguments are strings on the wire) are the arguments; `complete` adds completion providers by
 * name. The schema is converted and compiled here, once.
 */
export function promptArguments(
  ajv: Ajv,
  owner: string,
  declared: PromptArguments | undefined,
  complete: Readonly<Record<string, Completer | undefined>> | undefined
): PreparedArguments {
  let prepared: PreparedArguments
  if (declared !== undefined && (Kind in declared || isStandard(declared as AnySchema))) {
    const schema = declared as AnySchema
    const json = jsonSchemaOf(schema, `${owner} arguments`)
    if (json.type !== 'object') throw new ConfigurationError(`${owner}: arguments must be an object schema`)
    const props = Object.entries((json.properties ?? {}) as Record<string, Record<string, unknown>>)
    const bad = props.find(([, p]) => p.type !== 'string')
    if (bad !== undefined) throw new ConfigurationError(`${owner}: argument "${bad[0]}" must be a string schema (prompt arguments are strings)`)
    const required = new Set(json.required as string[] | undefined)
    prepared = {
      list: props.map(([name, p]) => stripUndefined({ name, title: p.title as string | undefined, description: p.description as string | undefined, required: required.has(name) })),
      required: props.map(([name]) => name).filter((name) => required.has(name)),
      completers: new Map(),
      validate: compileSchema(ajv, schema, json, `${owner} arguments`)
    }
  } else {
    const args = Object.entries(declared ?? {}) as [string, PromptArgumentDefinition][]
    prepared = {
      list: args.map(([name, a]) => stripUndefined({ name, title: a.title, description: a.description, required: a.required })),
      required: args.filter(([, a]) => a.required === true).map(([n]) => n),
      completers: new Map(args.flatMap(([n, a]) => (a.complete === undefined ? [] : [[n, a.complete] as const]))),
      validate: undefined
    }
  }
  for (const [name, completer] of Object.entries(complete ?? {})) {
    if (!prepared.list.some((a) => a.name === name)) throw new ConfigurationError(`${owner}: a completer for "${name}", which is no argument`)
    if (completer !== undefined) prepared.completers.set(name, completer)
  }
  return prepared
}
