import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { ErrorSchema } from './common.js'

const version = Type.Optional(
  Type.String({ maxLength: 64, description: 'Protocol version of the request (default: the server default, 2026-07-28).' })
)
const requestId = Type.Optional(
  Type.String({ maxLength: 128, description: 'Unique id of this request; echoed, logged, and named by cancellation.' })
)
const jsonHeader = (what: string) =>
  Type.Optional(Type.String({ description: `${what} as JSON text, or \`=?base64?<base64 of UTF-8 JSON>?=\` when not ASCII.` }))

/** Headers every MCP request may send. */
export const CommonHeaders = Type.Object({ 'mcp-protocol-version': version, 'mcp-request-id': requestId })

/** Headers of a GET request: its parameters travel here. */
export const GetHeaders = Type.Object({
  'mcp-protocol-version': version,
  'mcp-request-id': requestId,
  'mcp-meta': jsonHeader('The request `_meta` object')
})

/** Headers of a GET that may be a multi round-trip retry (prompts/get, resources/read). */
export const RetryGetHeaders = Type.Object({
  'mcp-protocol-version': version,
  'mcp-request-id': requestId,
  'mcp-meta': jsonHeader('The request `_meta` object'),
  'mcp-input-responses': jsonHeader('`inputResponses`'),
  'mcp-request-state': Type.Optional(Type.String({ description: '`requestState`, echoed verbatim.' }))
})

export const CursorQuery = Type.Object({
  cursor: Type.Optional(Type.String({ maxLength: 512, description: '`nextCursor` of the previous page.' }))
})

export const NotModified = Type.Null({ description: 'Not modified: the `If-None-Match` ETag is current.' })
export const Accepted = Type.Null({ description: 'Accepted.' })

// A reference to the shared error object (`$id` McpError, added once by the plugin), so the OpenAPI
// document names it once in components.schemas; the description is the response's own.
const err = (description: string) => Type.Unsafe<Static<typeof ErrorSchema>>({ $ref: `${ErrorSchema.$id}#`, description })

/** The error responses of a route, documented once: 429 and 503 (with `Retry-After`) may answer any. */
export function errorResponses(...extra: (404 | 409 | 413)[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {
    400: err('Invalid request: parse error -32700, invalid params -32602, header mismatch -32020, missing client capability -32021, unsupported version -32022.'),
    429: err('Too many requests, or this client holds its whole share (open streams, queued messages, running tasks): retry after `Retry-After` seconds.'),
    500: err('Internal error -32603; the body never carries details.'),
    503: err('The server cannot take it now (its store does not answer, it is full, or it is shutting down): retry after `Retry-After` seconds.')
  }
  for (const code of extra) {
    out[code] =
      code === 404
        ? err('Not found (-32602, or -32002 for a resource in the legacy era).')
        : code === 409
          ? err('This `Mcp-Request-Id` was used for a different call (-32600), or its first attempt still runs (with `Retry-After`).')
          : err('Request body too large.')
  }
  return out
}
