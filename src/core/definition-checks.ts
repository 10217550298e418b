/** Small checks and clean-ups of what a registration passes. */
import type { Ajv } from 'ajv'
import { ConfigurationError } from '../errors.js'
import { plan, type ResolverMap } from '../mrtr/resolvers.js'
import type { MrtrSpec } from '../mrtr/rounds.js'
import { compileSchema, jsonSchemaOf, type AnySchema } from './standard-schema.js'

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

/** A tool's scopes, each checked, without duplicates. */
export function toolScopes(name: string, scopes: readonly string[] | undefined): readonly string[] {
  const unique = Object.freeze([...new Set(scopes ?? [])])
  const bad = unique.find((s) => !SCOPE.test(s))
  if (bad !== undefined) throw new ConfigurationError(`Tool "${name}": "${bad}" is not an OAuth scope token`)
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
