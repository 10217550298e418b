import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { errors } from './errors.js'
import { jsonProblem } from './core/json-limits.js'

/** Header names of the Pure HTTP binding, lower-cased as Node presents them. */
export const Header = {
  protocolVersion: 'mcp-protocol-version',
  requestId: 'mcp-request-id',
  meta: 'mcp-meta',
  arguments: 'mcp-arguments',
  inputResponses: 'mcp-input-responses',
  requestState: 'mcp-request-state',
  sessionId: 'mcp-session-id',
  messageGroup: 'mcp-message-group',
  /** Alias of `Mcp-Message-Group` on the acknowledgement. */
  groupId: 'mcp-group-id',
  /** SEP-2243's standard headers of a 2026-07-28 message on `/mcp` (besides `Mcp-Param-{name}`). */
  method: 'mcp-method',
  name: 'mcp-name',
  idempotentReplayed: 'idempotent-replayed'
} as const

/*
 * What a browser on another origin may send and read (CORS). Every header above may be sent (naming
 * one that never comes costs nothing), so that a header added there is not forgotten here, and the
 * standard ones the binding reads. Authorization is never covered by a `*` answer: the lists are
 * explicit.
 */
/** Request headers a CORS preflight allows (`Mcp-Param-{name}` too: see src/plugins/cors.ts). */
export const CORS_REQUEST_HEADERS: readonly string[] = [
  ...Object.values(Header),
  'authorization',
  // RFC 9449's proof header, and its nonce on the way back.
  'dpop',
  'content-type',
  'accept',
  'if-none-match',
  'last-event-id'
]
/** Response headers a script on another origin may read (`Access-Control-Expose-Headers`): a new one goes here. */
export const CORS_RESPONSE_HEADERS: readonly string[] = [
  Header.protocolVersion,
  Header.requestId,
  Header.sessionId,
  Header.messageGroup,
  Header.idempotentReplayed,
  'etag',
  'location',
  'retry-after',
  'www-authenticate',
  'dpop-nonce',
  'allow',
  // @fastify/rate-limit's, with a limit configured: what is left of it.
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset'
]

/** A usable `Mcp-Request-Id`: 1-128 visible ASCII characters. */
export const REQUEST_ID = /^[\x21-\x7e]{1,128}$/

// Ids for requests that bring none: 72 random bits drawn once per process (so instances and restarts
// do not collide) and a sequence number. No random draw per request: a UUID cost ~2% of a small GET.
const ID_PREFIX = `${randomBytes(9).toString('base64url')}.`
let idSequence = 0

/** A fresh request id, unique across processes: `<12 random characters>.<sequence in base 36>`. */
export function newRequestId(): string {
  return ID_PREFIX + (++idSequence).toString(36)
}

/**
 * Fastify's `genReqId` for MCP: the request's `Mcp-Request-Id` when it is well-formed, else a fresh
 * id, so the log's request id is the one the response's `Mcp-Request-Id` carries.
 */
export function mcpRequestId(req: IncomingMessage): string {
  const id = req.headers[Header.requestId]
  return typeof id === 'string' && REQUEST_ID.test(id) ? id : newRequestId()
}

const ENCODED = /^=\?base64\?([A-Za-z0-9+/_-]*={0,2})\?=$/
// Visible ASCII plus space and tab: anything else must use the base64 form.
const PLAIN = /^[\t\x20-\x7e]*$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Decode a JSON-valued header: either the JSON text itself (ASCII only) or `=?base64?<base64 of
 * UTF-8 JSON>?=`. Returns undefined when the header is absent; throws 400 -32602 naming the header
 * for anything malformed, so a bad header is never silently ignored.
 */
export function decodeJsonHeader(
  name: string,
  raw: string | string[] | undefined,
  expect: 'object' | 'string'
): unknown {
  if (raw === undefined) return undefined
  if (Array.isArray(raw)) throw errors.invalidParams(`Invalid ${display(name)} header: sent more than once`)
  let text: string
  // JSON text never starts with '=': most headers skip the pattern.
  const m = raw.charCodeAt(0) === 61 ? ENCODED.exec(raw) : null
  if (m !== null) {
    const bytes = Buffer.from(m[1]!, m[1]!.includes('-') || m[1]!.includes('_') ? 'base64url' : 'base64')
    try {
      text = utf8.decode(bytes)
    } catch {
      throw errors.invalidParams(`Invalid ${display(name)} header: base64 content is not UTF-8`)
    }
  } else {
    if (!PLAIN.test(raw)) {
      throw errors.invalidParams(`Invalid ${display(name)} header: non-ASCII values must use the =?base64?...?= form`)
    }
    text = raw
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw errors.invalidParams(`Invalid ${display(name)} header: not valid JSON`)
  }
  const problem = jsonProblem(value)
  if (problem !== undefined) throw errors.invalidParams(`Invalid ${display(name)} header: it ${problem}`)
  const ok = expect === 'object' ? isPlainObject(value) : typeof value === 'string'
  if (!ok) throw errors.invalidParams(`Invalid ${display(name)} header: must be a JSON ${expect}`)
  return value
}

/** Encode a value for a JSON header, choosing the base64 form only when the JSON is not plain ASCII. */
export function encodeJsonHeader(value: unknown): string {
  const text = JSON.stringify(value)
  return PLAIN.test(text) ? text : `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function display(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())
}
