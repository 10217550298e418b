import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { ConfigurationError } from '../errors.js'

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext resolution.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

/**
 * One Ajv instance per server: tool input and output schemas, elicitation schemas. Each schema is
 * compiled once, at registration; requests only call the compiled function.
 */
export function createValidator(): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: true, validateFormats: true })
  addFormats(ajv)
  return ajv
}

export function compile(ajv: Ajv, schema: object, what: string): ValidateFunction {
  try {
    return ajv.compile(schema)
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
    e.keyword === 'required' ? 'is required'
    : e.keyword === 'additionalProperties' ? 'is not allowed'
    : e.keyword === 'enum' ? `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`
    : e.message! // set for every keyword unless Ajv runs with messages: false, which it never does here
  return { message: `${field} ${message}`, path }
}
