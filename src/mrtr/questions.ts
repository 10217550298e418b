import { ConfigurationError } from '../errors.js'
import { isStandard, jsonSchemaOf, type AnySchema, type Infer, type StandardJsonSchema } from '../core/standard-schema.js'
import type { InputRequest } from '../schema/mrtr.js'
import { digest } from '../hash.js'

const QUESTION = Symbol.for('mcp-pure-http.question')

/** What the client answered to an elicitation; `decline` and `cancel` carry no content. */
export type Outcome<T> = { action: 'accept'; content: T } | { action: 'decline' } | { action: 'cancel' }

export interface Root {
  uri: string
  name?: string
}

/** A sampling answer (`CreateMessageResult`). */
export interface SampledMessage {
  role: 'user' | 'assistant'
  content: unknown
  model: string
  stopReason?: string
  [key: string]: unknown
}

/**
 * A question for the client: the server-to-client request to send, and how to read its answer.
 * Made by {@link elicit}, {@link elicitUrl}, {@link sample} and {@link listRoots}; `T` is what the
 * asker receives once it is answered.
 */
export interface Question<T> {
  readonly [QUESTION]: true
  readonly request: InputRequest
  /** The capability the client must have declared to be asked this. */
  readonly capability: { readonly name: string; readonly sub?: string }
  /** Digest of the request: a changed question is a new question. */
  readonly digest: string
  /** Phantom: the type of the answer. */
  readonly answer?: T
}

export function isQuestion(v: unknown): v is Question<unknown> {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[QUESTION] === true
}

/**
 * The digest of a question is of its JSON text as this code builds it, keys in the order written,
 * not sorted as argument digests are: the same code asks the same question in the same order, and
 * a question whose text differs only by key order (another version of the code) is asked again,
 * never answered wrongly. Sorting was a fifth of a round's CPU (issue 22's profile).
 */
function question<T>(request: InputRequest, capability: Question<T>['capability'], known?: string): Question<T> {
  return { [QUESTION]: true, request, capability, digest: known ?? requestDigest(request) }
}

const requestDigest = (request: InputRequest): string => digest('sha256', JSON.stringify(request), 'base64url')

/**
 * Form digests by schema object and message: a handler asks the same form every round, and its
 * JSON text and sha256 were ~4 µs of a round (issue 22's profile). The same digest as
 * {@link requestDigest} of the request; a schema object is read once per message, as a library's
 * schema is converted once (to change a form, pass another schema object). At most 64 messages a
 * form (a message that carries data differs every call: those start the map again).
 */
const formDigests = new WeakMap<object, Map<string, string>>()

function formDigest(message: string, schema: object, request: InputRequest): string {
  let byMessage = formDigests.get(schema)
  if (byMessage === undefined) formDigests.set(schema, (byMessage = new Map()))
  let known = byMessage.get(message)
  if (known === undefined) {
    if (byMessage.size >= 64) byMessage.clear()
    byMessage.set(message, (known = requestDigest(request)))
  }
  return known
}

/**
 * Ask the user to fill a form (`elicitation/create`, form mode). Its answer is the accepted content,
 * typed by `schema` (a flat object of primitives, as MCP requires): TypeBox, or a Standard JSON
 * Schema such as a zod object. The answer is checked against the JSON Schema the client was shown.
 * @example elicit('Which city?', Type.Object({ city: Type.String() }))
 * @example elicit('Which city?', z.object({ city: z.string() }))
 */
export function elicit<S extends AnySchema>(message: string, schema: S): Question<Infer<S>> {
  // A TypeBox schema is sent as it is: its symbol keys (Kind) and undefined members vanish in JSON,
  // the only form it leaves in (the result, the sealed state, the digest). No copy per round.
  const requestedSchema = isStandard(schema) ? formOf(schema) : (schema as unknown as Record<string, unknown>)
  const request: InputRequest = { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } }
  return question(request, { name: 'elicitation' }, formDigest(message, requestedSchema, request))
}

// A library's schema converted once (a handler asks with the same schema object every call).
const forms = new WeakMap<StandardJsonSchema, Record<string, unknown>>()

/** A library's object schema as MCP's requestedSchema: `type`, `properties` and `required` only. */
function formOf(schema: StandardJsonSchema): Record<string, unknown> {
  let form = forms.get(schema)
  if (form === undefined) {
    const json = jsonSchemaOf(schema, 'elicit')
    if (json.type !== 'object') throw new ConfigurationError('elicit: the requested schema must be an object schema')
    form = { type: 'object', properties: json.properties ?? {}, ...(json.required === undefined ? {} : { required: json.required }) }
    forms.set(schema, form)
  }
  return form
}

/** Send the user to a URL (`elicitation/create`, url mode); the answer is `true` once they accept. */
export function elicitUrl(message: string, url: string, elicitationId: string): Question<true> {
  return question(
    { method: 'elicitation/create', params: { mode: 'url', message, url, elicitationId } },
    { name: 'elicitation', sub: 'url' }
  )
}

/** Ask the client's model (`sampling/createMessage`). */
export function sample(params: {
  messages: { role: 'user' | 'assistant'; content: Record<string, unknown> }[]
  maxTokens: number
  systemPrompt?: string
  [key: string]: unknown
}): Question<SampledMessage> {
  return question({ method: 'sampling/createMessage', params }, { name: 'sampling' })
}

/** Ask for the client's roots (`roots/list`); the answer is the list. */
export function listRoots(): Question<Root[]> {
  return question({ method: 'roots/list' }, { name: 'roots' })
}

const CAPABILITY: Record<InputRequest['method'], string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots'
}

/** A raw MCP request (as a hand-rolled handler may return it) as a question. */
export function questionFor(request: InputRequest): Question<unknown> {
  const name = CAPABILITY[request.method]
  return question(request, request.params?.mode === 'url' ? { name, sub: 'url' } : { name })
}

/**
 * What the client lacks to be asked all of `questions`, as `requiredCapabilities`
 * (`{ elicitation: { url: {} }, sampling: {} }`); undefined when it can be asked everything.
 */
export function missingCapabilities(
  questions: Iterable<Question<unknown>>,
  caps: Readonly<Record<string, unknown>> | undefined
): Record<string, Record<string, unknown>> | undefined {
  let missing: Record<string, Record<string, unknown>> | undefined
  for (const q of questions) {
    if (clientCan(q, caps)) continue
    const { name, sub } = q.capability
    missing ??= {}
    missing[name] = { ...missing[name], ...(sub === undefined ? {} : { [sub]: {} }) }
  }
  return missing
}

/** Whether the client declared what `q` needs (elicitation url mode needs `elicitation.url`). */
export function clientCan(q: Question<unknown>, caps: Readonly<Record<string, unknown>> | undefined): boolean {
  const cap = caps?.[q.capability.name]
  if (cap === undefined || cap === null) return false
  return q.capability.sub === undefined || (typeof cap === 'object' && (cap as Record<string, unknown>)[q.capability.sub] !== undefined)
}
