import type { IncomingHttpHeaders } from 'node:http'
import { errors } from '../errors.js'
import { isPlainObject } from '../headers.js'
import type { Incoming } from './message.js'

/** The body field each method's `Mcp-Name` header mirrors (SEP-2243; the Tasks extension adds `taskId`). */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId'
}

/** A header's value without RFC 9110 optional whitespace (Node joins a repeated one: it then mismatches). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name]
  return v === undefined ? undefined : String(v).replace(/^[\t ]+|[\t ]+$/g, '')
}

const SENTINEL = /^=\?base64\?(.*)\?=$/s
// RFC 4648 section 4 with its padding: SEP-2243 rejects `SGVsbG8` and non-alphabet characters.
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A mirrored header value: `=?base64?...?=` decoded (strictly), anything else literal; undefined when invalid. */
export function decodeHeaderValue(value: string): string | undefined {
  const m = SENTINEL.exec(value)
  if (m === null) return value
  if (!CANONICAL_BASE64.test(m[1]!)) return undefined
  try {
    return utf8.decode(Buffer.from(m[1]!, 'base64'))
  } catch {
    return undefined
  }
}

/**
 * The SEP-2243 standard headers of a 2026-07-28 message: `Mcp-Method` on every request, equal to the
 * body's method (compared case-sensitively); `Mcp-Name` on the methods that name a target, equal to it
 * once decoded. Any mismatch or absence is 400 -32020, so that an intermediary routing on the headers
 * and this server reading the body never disagree.
 */
export function checkStandardHeaders(msg: Exclude<Incoming, { kind: 'response' }>, headers: IncomingHttpHeaders): void {
  const method = headerValue(headers, 'mcp-method')
  if (method === undefined) {
    if (msg.kind === 'request') throw errors.headerMismatch('The Mcp-Method header is required')
  } else if (method !== msg.method) {
    throw errors.headerMismatch(`Mcp-Method header (${method.slice(0, 64)}) does not match the body method (${msg.method.slice(0, 64)})`)
  }
  const field = Object.hasOwn(NAME_SOURCE, msg.method) ? NAME_SOURCE[msg.method]! : undefined
  const value = field === undefined ? undefined : msg.params[field]
  if (typeof value !== 'string') return
  const raw = headerValue(headers, 'mcp-name')
  if (raw === undefined) throw errors.headerMismatch(`The Mcp-Name header is required for ${msg.method}`)
  const name = decodeHeaderValue(raw)
  if (name === undefined) throw errors.headerMismatch('Invalid Mcp-Name header: not valid =?base64?...?= content')
  if (name !== value) throw errors.headerMismatch(`Mcp-Name header does not match params.${field}`)
}

/** A tool parameter mirrored into `Mcp-Param-{header}` (an `x-mcp-header` in its input schema). */
interface Mirrored {
  path: readonly string[]
  header: string
  type: string
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const PRIMITIVE = new Set(['string', 'integer', 'number', 'boolean'])
const DECIMAL = /^-?\d+(?:\.\d+)?$/
const scanned = new WeakMap<object, readonly Mirrored[]>()

/** The mirrored parameters of an input schema: primitive properties reached by `properties` alone. */
function mirroredOf(schema: Record<string, unknown>): readonly Mirrored[] {
  let found = scanned.get(schema)
  if (found === undefined) {
    const out: Mirrored[] = []
    const visit = (node: unknown, path: string[]): void => {
      if (!isPlainObject(node)) return
      const header = node['x-mcp-header']
      const type = node.type
      if (path.length > 0 && typeof header === 'string' && TOKEN.test(header) && typeof type === 'string' && PRIMITIVE.has(type)) {
        out.push({ path, header, type })
      }
      if (isPlainObject(node.properties)) for (const [k, v] of Object.entries(node.properties)) visit(v, [...path, k])
    }
    visit(schema, [])
    scanned.set(schema, (found = out))
  }
  return found
}

/** The argument a mirrored parameter names, and its header text when it is a primitive. */
function mirroredValue(m: Mirrored, args: unknown): { value: unknown; text: string | undefined } {
  let value: unknown = args
  for (const key of m.path) value = isPlainObject(value) && Object.hasOwn(value, key) ? value[key] : undefined
  const text = typeof value === 'string'
    ? value
    : typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))
      ? String(value)
      : undefined
  return { value, text }
}

/**
 * The `Mcp-Param-{name}` headers a client sends with `args` for a tool of this input schema (the
 * gateway, calling a 2026-07-28 upstream), each value as `encode` makes it a header value.
 */
export function paramHeadersFor(inputSchema: Record<string, unknown>, args: unknown, encode: (text: string) => string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of mirroredOf(inputSchema)) {
    const { text } = mirroredValue(m, args)
    if (text !== undefined) out[`mcp-param-${m.header.toLowerCase()}`] = encode(text)
  }
  return out
}

/**
 * SEP-2243 custom headers: every `x-mcp-header` parameter present in the arguments must arrive in its
 * `Mcp-Param-{name}` header with the same value (numbers compared as numbers); else 400 -32020.
 */
export function checkParamHeaders(inputSchema: Record<string, unknown>, args: unknown, headers: IncomingHttpHeaders): void {
  for (const m of mirroredOf(inputSchema)) {
    const { value, text } = mirroredValue(m, args)
    // Absent or null: the client must omit the header. A non-primitive is for argument validation.
    if (text === undefined) continue
    const raw = headerValue(headers, `mcp-param-${m.header.toLowerCase()}`)
    if (raw === undefined) throw errors.headerMismatch(`The Mcp-Param-${m.header} header is required (it mirrors ${m.path.join('.')})`)
    const decoded = decodeHeaderValue(raw)
    if (decoded === undefined) throw errors.headerMismatch(`Invalid Mcp-Param-${m.header} header: not valid =?base64?...?= content`)
    const numeric = (m.type === 'integer' || m.type === 'number') && typeof value === 'number' && DECIMAL.test(decoded)
    if (numeric ? Number(decoded) !== value : decoded !== text) {
      throw errors.headerMismatch(`Mcp-Param-${m.header} header does not match the argument ${m.path.join('.')}`)
    }
  }
}
