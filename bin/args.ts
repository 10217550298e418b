/** mcp-http's command-line values: `--arg key=value` pairs, typed by the tool's input schema. */
import { readFileSync } from 'node:fs'
import { dpopKeyFromJwk, type DpopKey, type Json } from '../src/client/client.js'

/** Thrown for usage errors: exit code 2. */
export class UsageError extends Error {}

export function need(value: string | undefined, what: string): string {
  if (value === undefined) throw new UsageError(`Missing argument: ${what}`)
  return value
}

/**
 * `k=v` pairs. With a tool's `inputSchema`, a field the schema says is a string keeps the text as
 * typed (`--arg text=42` is "42"), any other is read as JSON when it parses (`n=5`, `ok=true`,
 * `tags=["a"]`); a field the schema does not describe is read as JSON when it parses. Without
 * `schema` (prompt arguments, which are strings) every value is text.
 */
export function keyValues(pairs: string[], schema?: Json): Json {
  const properties: Json = schema?.properties ?? {}
  const result: Json = {}
  for (const pair of pairs) {
    const eq = pair.indexOf('=')
    if (eq < 1) throw new UsageError(`--arg takes key=value, not ${pair}`)
    const key = pair.slice(0, eq)
    const value = pair.slice(eq + 1)
    result[key] = schema === undefined || isText(properties[key]) ? value : jsonOr(value)
  }
  return result
}

/** A field whose only values are strings: `type: "string"` (with `null` at most), or an enum of strings. */
function isText(field: Json | undefined): boolean {
  if (field === undefined) return false
  const types = ([] as unknown[]).concat(field.type ?? []).filter((t) => t !== 'null')
  if (types.length > 0) return types.every((t) => t === 'string')
  return Array.isArray(field.enum) && field.enum.every((v: unknown) => typeof v === 'string')
}

function jsonOr(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** A hint for an error the user can fix with an option: the server needs roots this client did not share. */
export function hint(err: { code?: unknown; data?: unknown }): string {
  const needs = (err.data as { requiredCapabilities?: Json } | undefined)?.requiredCapabilities
  return err.code === -32021 && needs?.roots !== undefined ? '\nThe server asks for this client\'s roots: share them with --roots <uri,uri...> (e.g. --roots file:///work)' : ''
}

/** `--dpop-key <file>`: the private JWK the token is bound to; a usage error names what is wrong. */
export function dpopKeyFile(file: string, token: string | undefined): DpopKey {
  if (token === undefined) throw new UsageError('--dpop-key needs --token (the access token bound to that key)')
  let jwk: unknown
  try {
    jwk = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new UsageError(`--dpop-key: ${file} is not a readable JWK file: ${(err as Error).message}`)
  }
  try {
    return dpopKeyFromJwk(jwk as Json)
  } catch (err) {
    throw new UsageError(`--dpop-key: ${(err as Error).message}`)
  }
}
