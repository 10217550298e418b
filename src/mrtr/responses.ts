import { Type } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import { errors } from '../errors.js'
import { compile, createValidator, describeErrors } from '../core/validation.js'

/** A question as remembered in sealed state between rounds. */
export interface Asked {
  /** Method of the request. */
  m: string
  /** Digest of the request. */
  h: string
  /** requestedSchema of a form elicitation. */
  s?: Record<string, unknown>
}

/**
 * What to remember of a request to check its answer later: its method, a digest (empty when the
 * request is looked up by id instead), and a form elicitation's requested schema.
 */
export function askedOf(request: { method: string; params?: Record<string, unknown> | undefined }, digest = ''): Asked {
  const asked: Asked = { m: request.method, h: digest }
  const p = request.params as { mode?: string; requestedSchema?: Record<string, unknown> } | undefined
  if (request.method === 'elicitation/create' && p?.mode !== 'url' && p?.requestedSchema !== undefined) asked.s = p.requestedSchema
  return asked
}

const ajv = createValidator()
const shapes: Record<string, ValidateFunction> = {
  'elicitation/create': compile(
    ajv,
    Type.Object({
      action: Type.Unsafe<'accept' | 'decline' | 'cancel'>({ type: 'string', enum: ['accept', 'decline', 'cancel'] }),
      content: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
    }),
    'ElicitResult'
  ),
  'sampling/createMessage': compile(
    ajv,
    Type.Object({
      role: Type.Unsafe<'user' | 'assistant'>({ type: 'string', enum: ['user', 'assistant'] }),
      content: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Record(Type.String(), Type.Unknown()))]),
      model: Type.String()
    }),
    'CreateMessageResult'
  ),
  'roots/list': compile(
    ajv,
    Type.Object({ roots: Type.Array(Type.Object({ uri: Type.String({ pattern: '^file://' }), name: Type.Optional(Type.String()) })) }),
    'ListRootsResult'
  )
}

// requestedSchemas compiled once each, by their JSON text as sealed (the same question gives the same
// text); bounded, oldest dropped first.
const formValidators = new Map<string, ValidateFunction>()
const MAX_FORMS = 500
// The same validators by question digest, which covers the schema: a round's answer finds its
// validator without writing the schema out again (JSON.stringify was ~3% of a round 2, issue 22's
// profile). Questions whose message carries data have a digest each and share one compiled schema.
const formsByDigest = new Map<string, ValidateFunction>()
const MAX_DIGESTS = 4096

function formValidator(asked: Asked & { s: Record<string, unknown> }): ValidateFunction {
  if (asked.h !== '') {
    const known = formsByDigest.get(asked.h)
    if (known !== undefined) return known
  }
  const key = JSON.stringify(asked.s)
  let v = formValidators.get(key)
  if (v === undefined) {
    v = compile(ajv, asked.s, 'requestedSchema')
    if (formValidators.size >= MAX_FORMS) formValidators.delete(formValidators.keys().next().value!)
    formValidators.set(key, v)
  }
  if (asked.h !== '') {
    if (formsByDigest.size >= MAX_DIGESTS) formsByDigest.delete(formsByDigest.keys().next().value!)
    formsByDigest.set(asked.h, v)
  }
  return v
}

/**
 * Check a client's answer to a question the server asked: the result shape of its method, and for an
 * accepted form elicitation, the content against the requested schema. 400 -32602 naming `what`
 * (`inputResponses["key"]`, or `response`).
 */
export function checkResponse(what: string, asked: Asked, response: unknown): void {
  const problem = responseProblem(asked, response)
  if (problem !== undefined) throw errors.invalidParams(`Invalid ${what}: ${problem}`)
}

/** Why `response` does not answer `asked` (its shape, or a form's content), or undefined when it does. */
export function responseProblem(asked: Asked, response: unknown): string | undefined {
  const shape = shapes[asked.m]!
  if (!shape(response)) return describeErrors(shape.errors).message
  const r = response as { action?: string; content?: unknown }
  if (asked.s !== undefined && r.action === 'accept') {
    const form = formValidator(asked as Asked & { s: Record<string, unknown> })
    if (!form(r.content ?? {})) return `content.${describeErrors(form.errors).message}`
  }
  return undefined
}
