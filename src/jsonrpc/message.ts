import { errors, type McpError } from '../errors.js'
import { isPlainObject } from '../headers.js'
import type { ClientAnswer } from '../store/types.js'

/** A JSON-RPC request id. MCP forbids `null`; JSON-RPC uses it only for errors whose request id is unknown. */
export type RequestId = string | number

/** One message a client POSTs to the MCP endpoint. */
export type Incoming =
  | { kind: 'request'; id: RequestId; method: string; params: Record<string, unknown> }
  | { kind: 'notification'; method: string; params: Record<string, unknown> }
  | { kind: 'response'; id: RequestId; answer: ClientAnswer }

const isId = (v: unknown): v is RequestId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))

/** The id of a body that may be a request, so that even its rejection can name it (else null). */
export function idOf(body: unknown): RequestId | null {
  return isPlainObject(body) && typeof body.method === 'string' && isId(body.id) ? body.id : null
}

/**
 * Read the body as one JSON-RPC message. Batches are refused: MCP removed them in 2025-06-18, and
 * 2026-07-28 requires one message a POST. Anything that is not a request, notification or response
 * is 400 -32600. A response's result must be an object (every ClientResult is).
 */
export function parseMessage(body: unknown): Incoming {
  if (Array.isArray(body)) throw errors.invalidRequest('JSON-RPC batches are not supported: send one message per POST')
  if (!isPlainObject(body) || body.jsonrpc !== '2.0') {
    throw errors.invalidRequest('The body must be a JSON-RPC 2.0 message ({"jsonrpc": "2.0", ...})')
  }
  if (body.method === undefined) {
    if (isId(body.id) && isPlainObject(body.result)) return { kind: 'response', id: body.id, answer: { result: body.result } }
    if (isId(body.id) && isPlainObject(body.error)) return { kind: 'response', id: body.id, answer: { error: errorOf(body.error) } }
    throw errors.invalidRequest('A JSON-RPC message needs a method, or a result or error with an id')
  }
  if (typeof body.method !== 'string' || body.method === '') throw errors.invalidRequest('method must be a non-empty string')
  const params = body.params ?? {}
  if (!isPlainObject(params)) throw errors.invalidRequest('params must be an object')
  if (!Object.hasOwn(body, 'id')) return { kind: 'notification', method: body.method, params }
  if (!isId(body.id)) throw errors.invalidRequest('id must be a string or a number')
  return { kind: 'request', id: body.id, method: body.method, params }
}

/** A client's JSON-RPC error object, checked and bounded: it is passed on to the handler that asked. */
function errorOf(error: Record<string, unknown>): { code: number; message: string; data?: unknown } {
  if (!Number.isInteger(error.code) || typeof error.message !== 'string') {
    throw errors.invalidRequest('A JSON-RPC error needs an integer code and a string message')
  }
  const out: { code: number; message: string; data?: unknown } = { code: error.code as number, message: error.message.slice(0, 1024) }
  if (error.data !== undefined) out.data = error.data
  return out
}

/** A method's answer when it wrote the response itself (an SSE stream). */
export const STREAMED = Symbol('streamed')

/** The response text of a result already serialized (list pages and discover are cached as text). */
export function resultText(id: RequestId, result: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`
}

/** The response text of an error; `undefined` leaves the id out (a notification has none to name). */
export function errorText(id: RequestId | null | undefined, error: McpError): string {
  return JSON.stringify(id === undefined ? { jsonrpc: '2.0', error } : { jsonrpc: '2.0', id, error })
}
