import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { ConfigurationError } from '../errors.js'

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext resolution.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const OPTIONS: Options = { allErrors: false, strict: false, coerceTypes: false, useDefaults: true, validateFormats: true }

/**
 * One Ajv instance per server: tool input and output schemas, elicitation schemas. Each schema is
 * compiled once, at registration; requests only call the compiled function.
 */
export function createValidator(): Ajv {
  const ajv = new Ajv(OPTIONS)
  addFormats(ajv)
  return ajv
}

const DRAFT_2020_12 = new Set(['https://json-schema.org/draft/2020-12/schema', 'https://json-schema.org/draft/2020-12/schema#'])
// Schemas that declare JSON Schema 2020-12 (MCP's dialect since 2025-11-25) compile with a 2020-12
// Ajv kept beside each draft-07 one; everything else keeps the draft-07 semantics it was written for.
const dialect2020 = new WeakMap<Ajv, Ajv2020>()

export function compile(ajv: Ajv, schema: object, what: string): ValidateFunction {
  try {
    if (!DRAFT_2020_12.has((schema as { $schema?: string }).$schema!)) return ajv.compile(schema)
    let ajv2020 = dialect2020.get(ajv)
    if (ajv2020 === undefined) {
      dialect2020.set(ajv, (ajv2020 = new Ajv2020(OPTIONS)))
      addFormats(ajv2020 as unknown as Ajv)
    }
    return ajv2020.compile(schema)
  } catch (err) {
    throw new ConfigurationError(`${what}: invalid JSON Schema: ${(err as Error).message}`)
  }
}

/** One readable line for the first validation error, naming the field: `a: must be number`. */
export function describeErrors(errs: ErrorObject[] | null | undefined): { message: string; path: string } {
  // Ajv always sets `errors` when validation fails, which is the only time this is called.
  const e = errs![0]!
  let path = e.instancePath
  if (e.keyword === 'required') path += `/${(e.params as { missingProperty: string }).missingProperty}`
  else if (e.keyword === 'additionalProperties') path += `/${(e.params as { additionalProperty: string }).additionalProperty}`
  const field = path === '' ? '(root)' : path.slice(1).replaceAll('/', '.')
  const message =
    e.keyword === 'required'
      ? 'is required'
      : e.keyword === 'additionalProperties'
        ? 'is not allowed'
        : e.keyword === 'enum'
          ? `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`
          : e.message! // set for every keyword unless Ajv runs with messages: false, which it never does here
  return { message: `${field} ${message}`, path }
}
