/**
 * Schemas from other libraries: anything that implements Standard Schema and Standard JSON Schema
 * (standardschema.dev; zod 4, valibot through `@valibot/to-json-schema`, ArkType...). The interfaces
 * are declared here, as the standard intends, so no library is a dependency of this package.
 *
 * Validation stays Ajv over the JSON Schema the library produces (the schema the client is shown is
 * the one that is checked, compiled once at registration, with the same error messages as TypeBox),
 * followed by the library's own `validate` for what JSON Schema cannot say (zod's `.refine`).
 * Transforms cannot run that way (the handler gets the checked arguments, not a parsed copy), so a
 * schema whose output the library cannot express in JSON Schema is refused at registration.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv'
import { ConfigurationError } from '../errors.js'
import { compile } from './validation.js'

interface StandardIssue {
  readonly message: string
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined
}
type StandardResult = { readonly value: unknown; readonly issues?: undefined } | { readonly issues: ReadonlyArray<StandardIssue> }

/** Standard Schema V1 with Standard JSON Schema V1: a schema that validates and converts to JSON Schema. */
export interface StandardJsonSchema<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1
    readonly vendor: string
    readonly types?: { readonly input: Input; readonly output: Output } | undefined
    readonly validate: (value: unknown) => StandardResult | Promise<StandardResult>
    readonly jsonSchema: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>
      readonly output: (options: { readonly target: string }) => Record<string, unknown>
    }
  }
}

/** A schema for arguments, structured output or state: TypeBox (or any JSON Schema in `Type.Unsafe`), or a Standard JSON Schema. */
export type AnySchema = TSchema | StandardJsonSchema<any, any>

/** The value a handler receives for a schema: TypeBox's `Static`, else the library's output type. */
export type Infer<S> = S extends TSchema ? Static<S> : S extends StandardJsonSchema<any, infer O> ? O : unknown

/** The value a handler returns for a schema (`structuredContent`): TypeBox's `Static`, else the library's input type. */
export type InferInput<S> = S extends TSchema ? Static<S> : S extends StandardJsonSchema<infer I, any> ? I : unknown

const TARGET = 'draft-2020-12'
const DIALECT = 'https://json-schema.org/draft/2020-12/schema'

export function isStandard(schema: AnySchema): schema is StandardJsonSchema {
  const props = (schema as { '~standard'?: { jsonSchema?: unknown } })['~standard']
  return typeof props?.jsonSchema === 'object' && props.jsonSchema !== null
}

/** The schema as plain JSON Schema: TypeBox's without its symbol keys; a library's through its converter (2020-12). */
export function jsonSchemaOf(schema: AnySchema, what: string): Record<string, unknown> {
  if (!isStandard(schema)) {
    if ('~standard' in schema) throw new ConfigurationError(`${what}: a Standard Schema without Standard JSON Schema (its library's JSON Schema adapter makes one)`)
    return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
  }
  const convert = schema['~standard'].jsonSchema
  let json: Record<string, unknown>
  try {
    json = convert.input({ target: TARGET })
    // The output is what the handler gets; a library that cannot write it (a transform) cannot be checked by it.
    convert.output({ target: TARGET })
  } catch (err) {
    throw new ConfigurationError(`${what}: the ${schema['~standard'].vendor} schema has no JSON Schema (${(err as Error).message})`)
  }
  return { $schema: DIALECT, ...json }
}

/**
 * Compile the validator of a schema once: Ajv over its JSON Schema, then, for a Standard Schema, the
 * library's own checks. Failures read like Ajv's (`field message`), whichever found them.
 */
export function compileSchema(ajv: Ajv, schema: AnySchema, json: Record<string, unknown>, what: string): ValidateFunction {
  const validate = compile(ajv, json, what)
  if (!isStandard(schema)) return validate
  const own = schema['~standard'].validate
  const both = ((data: unknown) => {
    if (!validate(data)) {
      both.errors = validate.errors
      return false
    }
    const result = own(data)
    let issues = result instanceof Promise ? [] : (result.issues ?? [])
    if (result instanceof Promise) {
      void result.catch(() => undefined)
      issues = [{ message: 'needs asynchronous validation, which this server does not run' }]
    }
    both.errors = issues.length === 0 ? null : issues.map(toAjvError)
    return issues.length === 0
  }) as ValidateFunction
  return both
}

function toAjvError(issue: StandardIssue): ErrorObject {
  const path = (issue.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p))
  return { instancePath: path.map((p) => `/${p}`).join(''), schemaPath: '#', keyword: 'standard', params: {}, message: issue.message }
}
