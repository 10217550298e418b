import { StoreError, type StoreLimitError } from './store/store-errors.js'

/**
 * The one error catalogue. A {@link McpError} is a wire error: it carries the JSON-RPC code, the HTTP
 * status and a stable name (`MCP_ERR_...`, an entry of {@link catalogue}), and both faces (Pure HTTP
 * and JSON-RPC) render it as is. Anything else thrown while serving a request is a programming error
 * and becomes an opaque 500 -32603.
 */
export const ErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** Legacy-era (before 2026-07-28) code for an unknown resource. */
  resourceNotFoundLegacy: -32002,
  headerMismatch: -32020,
  missingCapability: -32021,
  unsupportedVersion: -32022
} as const

const C = ErrorCode

/**
 * Every error the server answers, by its stable name: its JSON-RPC code, its HTTP status on the Pure
 * HTTP face (over /mcp most ride in a 200, see docs/jsonrpc.md), the headers it carries and, where
 * the words never change, its message. A code or status that is not one number is a sentence
 * saying whose it is (an upstream server's, the application's). docs/errors.md lists the same
 * table, and test/faces/error-catalogue.test.ts holds the two equal.
 */
export const catalogue = {
  MCP_ERR_PARSE: { rpc: C.parseError, status: 400, message: 'Parse error: the body is not valid JSON' },
  MCP_ERR_INVALID_REQUEST: { rpc: C.invalidRequest, status: 400 },
  MCP_ERR_INVALID_PARAMS: { rpc: C.invalidParams, status: 400 },
  MCP_ERR_HEADER_MISMATCH: { rpc: C.headerMismatch, status: 400 },
  MCP_ERR_MISSING_CAPABILITY: { rpc: C.missingCapability, status: 400, message: 'Missing required client capability' },
  MCP_ERR_UNSUPPORTED_VERSION: { rpc: C.unsupportedVersion, status: 400 },
  MCP_ERR_MALFORMED_HTTP: { rpc: C.invalidRequest, status: 400, message: 'Malformed HTTP request' },
  MCP_ERR_UNAUTHORIZED: { rpc: C.invalidRequest, status: 401, headers: ['www-authenticate'] },
  MCP_ERR_INSUFFICIENT_SCOPE: { rpc: C.invalidRequest, status: 403, headers: ['www-authenticate'] },
  MCP_ERR_FORBIDDEN: { rpc: C.invalidRequest, status: 403 },
  MCP_ERR_USER_TOKEN_REQUIRED: { rpc: C.invalidRequest, status: 403 },
  MCP_ERR_TOKEN_EXCHANGE_REFUSED: { rpc: C.invalidRequest, status: 403 },
  MCP_ERR_TOKEN_NOT_FORWARDABLE: { rpc: C.invalidRequest, status: 403 },
  MCP_ERR_METHOD_NOT_FOUND: { rpc: C.methodNotFound, status: 404, message: 'Method not found' },
  MCP_ERR_NOT_FOUND: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_UNKNOWN_TOOL: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_UNKNOWN_PROMPT: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_UNKNOWN_RESOURCE_TEMPLATE: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_RESOURCE_NOT_FOUND: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_RESOURCE_NOT_FOUND_LEGACY: { rpc: C.resourceNotFoundLegacy, status: 404 },
  MCP_ERR_UNKNOWN_TASK: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_UNKNOWN_REQUEST: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_UNKNOWN_MESSAGE_GROUP: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_UNKNOWN_WEBHOOK: { rpc: C.invalidParams, status: 404 },
  MCP_ERR_UNKNOWN_SESSION: { rpc: C.invalidRequest, status: 404, message: 'Unknown or expired Mcp-Session-Id: initialize again' },
  MCP_ERR_METHOD_NOT_ALLOWED: { rpc: C.methodNotFound, status: 405, message: 'Method not allowed', headers: ['allow'] },
  MCP_ERR_REQUEST_TIMEOUT: { rpc: C.invalidRequest, status: 408, message: 'Request timeout' },
  MCP_ERR_CALL_RUNNING: { rpc: C.invalidRequest, status: 409, headers: ['retry-after'] },
  MCP_ERR_CALL_MISMATCH: { rpc: C.invalidRequest, status: 409 },
  MCP_ERR_PAYLOAD_TOO_LARGE: { rpc: C.invalidRequest, status: 413, message: 'Request body too large' },
  MCP_ERR_URI_TOO_LONG: {
    rpc: C.invalidRequest,
    status: 414,
    message: 'A path parameter is longer than 4096 characters: send the value in the body (POST)'
  },
  MCP_ERR_UNSUPPORTED_MEDIA_TYPE: { rpc: C.invalidRequest, status: 415, message: 'Content-Type must be application/json' },
  MCP_ERR_HEADERS_TOO_LARGE: {
    rpc: C.invalidRequest,
    status: 431,
    message: 'Request headers too large: send the parameters in the body with POST'
  },
  MCP_ERR_HTTP: { rpc: C.invalidRequest, status: 'the 4xx Fastify or a plugin gives' },
  MCP_ERR_RATE_LIMITED: { rpc: C.invalidRequest, status: 429, headers: ['retry-after'] },
  MCP_ERR_AUTH_RATE_LIMITED: { rpc: C.invalidRequest, status: 429, headers: ['retry-after'] },
  MCP_ERR_TOO_MANY_STREAMS: { rpc: C.invalidRequest, status: 429, headers: ['retry-after'] },
  MCP_ERR_TOO_MANY_ROUNDS: { rpc: C.invalidRequest, status: 429, headers: ['retry-after'] },
  MCP_ERR_STORE_QUOTA: { rpc: C.invalidRequest, status: 429, headers: ['retry-after'] },
  MCP_ERR_STORE_TOO_MANY_SUBSCRIPTIONS: { rpc: C.invalidParams, status: 400 },
  MCP_ERR_INTERNAL: { rpc: C.internalError, status: 500, message: 'Internal error' },
  MCP_ERR_OUTPUT_SCHEMA: { rpc: C.internalError, status: 500 },
  MCP_ERR_UPSTREAM_REQUEST_REFUSED: { rpc: C.internalError, status: 500 },
  MCP_ERR_UPSTREAM: { rpc: 'the upstream server\'s', status: 'the upstream\'s (2026-07-28); else 400, 404 or 502' },
  MCP_ERR_UPSTREAM_FAILED: { rpc: C.internalError, status: 502 },
  MCP_ERR_UPSTREAM_CLOSED: { rpc: C.internalError, status: 502 },
  MCP_ERR_UPSTREAM_BAD_ANSWER: { rpc: C.internalError, status: 502 },
  MCP_ERR_TOKEN_EXCHANGE_FAILED: { rpc: C.internalError, status: 502 },
  MCP_ERR_UPSTREAM_TIMEOUT: { rpc: C.internalError, status: 504 },
  MCP_ERR_UPSTREAM_DOWN: { rpc: C.internalError, status: 503, headers: ['retry-after'] },
  MCP_ERR_UNAVAILABLE: { rpc: C.internalError, status: 503, headers: ['retry-after'] },
  MCP_ERR_AUTH_UNAVAILABLE: {
    rpc: C.internalError,
    status: 503,
    message: 'Cannot verify the access token now: the authorization server\'s keys are unavailable',
    headers: ['retry-after']
  },
  MCP_ERR_OVERLOADED: { rpc: C.internalError, status: 503, message: 'The server is overloaded: retry later', headers: ['retry-after'] },
  MCP_ERR_NOT_READY: { rpc: C.internalError, status: 503, message: 'Not ready: the store does not answer', headers: ['retry-after'] },
  MCP_ERR_SHUTTING_DOWN: {
    rpc: C.internalError,
    status: 503,
    message: 'The server is shutting down: retry on another connection',
    headers: ['retry-after']
  },
  MCP_ERR_STREAMS_FULL: { rpc: C.internalError, status: 503, message: 'This server holds as many streams as it can: retry later', headers: ['retry-after'] },
  MCP_ERR_STORE_QUEUE_FULL: { rpc: C.internalError, status: 503, headers: ['retry-after'] },
  MCP_ERR_STORE_TOO_MANY_TASKS: { rpc: C.internalError, status: 503, headers: ['retry-after'] },
  MCP_ERR_STORE_FULL: { rpc: C.internalError, status: 503, headers: ['retry-after'] },
  MCP_ERR_STORE_NOT_REPLICATED: { rpc: C.internalError, status: 503, headers: ['retry-after'] },
  MCP_ERR_STORE_UNAVAILABLE: { rpc: C.internalError, status: 503, headers: ['retry-after'] },
  MCP_ERR_APPLICATION: { rpc: 'yours', status: 'yours' }
} as const satisfies Record<string, CatalogueEntry>

export interface CatalogueEntry {
  /** The JSON-RPC `error.code`, or whose it is when it is not one number. */
  rpc: number | string
  /** The HTTP status on the Pure HTTP face, or whose it is when it is not one number. */
  status: number | string
  /** The words, when they never change. */
  message?: string
  /** The response headers the error always carries. */
  headers?: readonly string[]
}

/** The stable name of an error the server answers: a key of {@link catalogue}. */
export type McpErrorName = keyof typeof catalogue

type Fixed = { [K in McpErrorName]: (typeof catalogue)[K]['rpc'] extends number ? ((typeof catalogue)[K]['status'] extends number ? K : never) : never }[McpErrorName]
type Worded = { [K in McpErrorName]: (typeof catalogue)[K] extends { message: string } ? K : never }[McpErrorName]

/**
 * A wire error. Its `name` is the catalogue's name of the error, not the class's: as with
 * `DOMException` (`AbortError`, `TimeoutError`), `instanceof McpError` says what kind of object it
 * is and `name` which error, so that `String(err)`, stack traces and logs say it. The string cannot
 * be `code`, which stays the JSON-RPC number (the official SDK's `McpError` shape, `toJSON`).
 */
export class McpError extends Error {
  /**
   * The stable name (`MCP_ERR_UNKNOWN_TOOL`), for logs and tests: a key of {@link catalogue}, or
   * `MCP_ERR_APPLICATION` (or the name given) for an error the application builds. Not `code`, which
   * is the JSON-RPC number as in the official SDK's `McpError`; not sent on the wire.
   */
  override readonly name: McpErrorName | (string & {})

  constructor(
    readonly code: number,
    message: string,
    readonly status: number,
    readonly data?: unknown,
    /** Extra response headers (Allow, Retry-After, WWW-Authenticate). */
    readonly headers?: Record<string, string>,
    name: McpErrorName | (string & {}) = 'MCP_ERR_APPLICATION'
  ) {
    super(message)
    this.name = name
  }

  /** The same error (same name and code) with another message, status or headers: a face's rendering of it. */
  with(change: { message?: string; status?: number; headers?: Record<string, string> }): McpError {
    return new McpError(this.code, change.message ?? this.message, change.status ?? this.status, this.data, change.headers ?? this.headers, this.name)
  }

  toJSON(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data }
  }
}

/** The catalogue's error `name` with its fixed code and status; the message is the catalogue's unless given. */
function fixed(name: Worded & Fixed, message?: string, data?: unknown, headers?: Record<string, string>): McpError
function fixed(name: Fixed, message: string, data?: unknown, headers?: Record<string, string>): McpError
function fixed(name: Fixed, message?: string, data?: unknown, headers?: Record<string, string>): McpError {
  const entry: CatalogueEntry = catalogue[name]
  return new McpError(entry.rpc as number, message ?? entry.message!, entry.status as number, data, headers, name)
}

const retryAfter = (sec: number | string) => ({ 'retry-after': String(sec) })

/**
 * Constructors for every wire error the server answers; routes and core never spell a code
 * themselves. The first group is public (handlers throw them); the rest name one error each.
 */
export const errors = {
  parse: (message?: string) => fixed('MCP_ERR_PARSE', message),
  invalidRequest: (message: string) => fixed('MCP_ERR_INVALID_REQUEST', message),
  invalidParams: (message: string, data?: unknown) => fixed('MCP_ERR_INVALID_PARAMS', message, data),
  methodNotFound: (message?: string) => fixed('MCP_ERR_METHOD_NOT_FOUND', message),
  methodNotAllowed: (allow: string[]) => fixed('MCP_ERR_METHOD_NOT_ALLOWED', undefined, { allow }, { allow: allow.join(', ') }),
  /** 404; `code` other than -32602 is the application's own (`MCP_ERR_APPLICATION`). */
  notFound: (message: string, code: number = ErrorCode.invalidParams, data?: unknown) =>
    code === ErrorCode.invalidParams ? fixed('MCP_ERR_NOT_FOUND', message, data) : new McpError(code, message, 404, data),
  headerMismatch: (message: string) => fixed('MCP_ERR_HEADER_MISMATCH', message),
  missingCapability: (requiredCapabilities: Record<string, unknown>, message?: string) =>
    fixed('MCP_ERR_MISSING_CAPABILITY', message, { requiredCapabilities }),
  unsupportedVersion: (requested: string, supported: readonly string[]) =>
    fixed('MCP_ERR_UNSUPPORTED_VERSION', `Unsupported protocol version: ${requested}`, { supported, requested }),
  payloadTooLarge: (message?: string) => fixed('MCP_ERR_PAYLOAD_TOO_LARGE', message),
  unsupportedMediaType: (message?: string) => fixed('MCP_ERR_UNSUPPORTED_MEDIA_TYPE', message),
  internal: () => fixed('MCP_ERR_INTERNAL'),
  /** 401: no usable credentials; `challenge` is the `WWW-Authenticate` value (RFC 6750). */
  unauthorized: (message: string, challenge: string) =>
    fixed('MCP_ERR_UNAUTHORIZED', message, undefined, { 'www-authenticate': challenge }),
  /** 403: the request is understood and refused (a Host or Origin not allowed). */
  forbidden: (message: string) => fixed('MCP_ERR_FORBIDDEN', message),
  /** 403: the token lacks a scope the target requires (RFC 6750 `insufficient_scope`). */
  insufficientScope: (what: string, scopes: readonly string[]) =>
    fixed('MCP_ERR_INSUFFICIENT_SCOPE', `Insufficient scope: ${what} requires ${scopes.join(' ')}`, undefined, {
      'www-authenticate': `Bearer error="insufficient_scope", scope="${scopes.join(' ')}"`
    }),
  /** 503: something the server needs cannot be reached now. */
  unavailable: (message: string, retryAfterSec: number) => fixed('MCP_ERR_UNAVAILABLE', message, undefined, retryAfter(retryAfterSec)),

  unknownTool: (name: string) => fixed('MCP_ERR_UNKNOWN_TOOL', `Unknown tool: ${name}`),
  unknownPrompt: (name: string) => fixed('MCP_ERR_UNKNOWN_PROMPT', `Unknown prompt: ${name}`),
  unknownResourceTemplate: (uri: string) => fixed('MCP_ERR_UNKNOWN_RESOURCE_TEMPLATE', `Unknown resource template: ${uri}`),
  /** Resource not found: -32602 from 2026-07-28 on, -32002 before; 404 either way. */
  resourceNotFound: (uri: string, era: 'legacy' | 'modern') =>
    fixed(era === 'modern' ? 'MCP_ERR_RESOURCE_NOT_FOUND' : 'MCP_ERR_RESOURCE_NOT_FOUND_LEGACY', `Resource not found: ${uri}`, { uri }),
  unknownTask: (taskId: string) => fixed('MCP_ERR_UNKNOWN_TASK', `Unknown task: ${taskId.slice(0, 128)}`),
  unknownRequest: (id: string) => fixed('MCP_ERR_UNKNOWN_REQUEST', `Unknown or already answered request: ${id.slice(0, 128)}`),
  unknownMessageGroup: (groupId: string) => fixed('MCP_ERR_UNKNOWN_MESSAGE_GROUP', `Unknown message group: ${groupId.slice(0, 128)}`),
  unknownWebhook: (id: string) => fixed('MCP_ERR_UNKNOWN_WEBHOOK', `Unknown webhook: ${id.slice(0, 64)}`),
  unknownSession: () => fixed('MCP_ERR_UNKNOWN_SESSION'),
  uriTooLong: () => fixed('MCP_ERR_URI_TOO_LONG'),
  requestTimeout: () => fixed('MCP_ERR_REQUEST_TIMEOUT'),
  headersTooLarge: () => fixed('MCP_ERR_HEADERS_TOO_LARGE'),
  malformedHttp: () => fixed('MCP_ERR_MALFORMED_HTTP'),
  /** A 4xx Fastify or a plugin raised, with its status and words. */
  http: (status: number, message: string) => new McpError(ErrorCode.invalidRequest, message, status, undefined, undefined, 'MCP_ERR_HTTP'),
  rateLimited: (max: number, windowSec: number, after: string, retryAfterSec: number) =>
    fixed('MCP_ERR_RATE_LIMITED', `Rate limit exceeded: at most ${max} requests in ${windowSec} s; retry in ${after}`, undefined, retryAfter(retryAfterSec)),
  authRateLimited: (max: number, windowSec: number, retryAfterSec: number) =>
    fixed('MCP_ERR_AUTH_RATE_LIMITED', `Too many refused authentications: at most ${max} in ${windowSec} s; retry in ${retryAfterSec} s`, undefined, retryAfter(retryAfterSec)),
  tooManyStreams: (max: number, retryAfterSec: number | string) =>
    fixed('MCP_ERR_TOO_MANY_STREAMS', `Too many open streams: at most ${max} per client at once; end one, or retry later`, undefined, retryAfter(retryAfterSec)),
  streamsFull: (retryAfterSec: number | string) => fixed('MCP_ERR_STREAMS_FULL', undefined, undefined, retryAfter(retryAfterSec)),
  tooManyRounds: (max: number, retryAfterSec: number) =>
    fixed('MCP_ERR_TOO_MANY_ROUNDS', `Too many open rounds: at most ${max} calls may wait for your answers at once`, undefined, retryAfter(retryAfterSec)),
  callRunning: (key: string) => fixed('MCP_ERR_CALL_RUNNING', `A request with Mcp-Request-Id ${key} is still running: retry later`, undefined, retryAfter(1)),
  callMismatch: (key: string) => fixed('MCP_ERR_CALL_MISMATCH', `Mcp-Request-Id ${key} was already used for a different request`),
  overloaded: (retryAfterSec: number) => fixed('MCP_ERR_OVERLOADED', undefined, undefined, retryAfter(retryAfterSec)),
  /** `GET /ready`: the store is silent, or `cause` (a readiness check of the app's own, such as a gateway's upstream). */
  notReady: (retryAfterSec: number, cause?: string) =>
    fixed('MCP_ERR_NOT_READY', cause === undefined ? undefined : `Not ready: ${cause}`, undefined, retryAfter(retryAfterSec)),
  shuttingDown: () => fixed('MCP_ERR_SHUTTING_DOWN', undefined, undefined, retryAfter(1)),
  authUnavailable: (retryAfterSec: number) => fixed('MCP_ERR_AUTH_UNAVAILABLE', undefined, undefined, retryAfter(retryAfterSec)),
  /** A tool's result breaks its own `outputSchema`: the server's fault, named. */
  outputSchema: (tool: string, problem: string) =>
    fixed('MCP_ERR_OUTPUT_SCHEMA', `Tool ${tool} returned a result that does not match its outputSchema: ${problem}`),

  /** An upstream server's own JSON-RPC error, passed through with its code, words and data. */
  upstream: (code: number, message: string, status: number, data?: unknown) => new McpError(code, message, status, data, undefined, 'MCP_ERR_UPSTREAM'),
  upstreamFailed: (message: string) => fixed('MCP_ERR_UPSTREAM_FAILED', message),
  upstreamClosed: (name: string) => fixed('MCP_ERR_UPSTREAM_CLOSED', `The upstream server ${name} closed the connection during the request`),
  upstreamTimeout: (name: string, ms?: number) =>
    fixed('MCP_ERR_UPSTREAM_TIMEOUT', `The upstream server ${name} did not answer in time${ms === undefined ? '' : ` (nothing from it for ${ms / 1000} s)`}`),
  /** An upstream answer the gateway cannot read (not JSON, no result, too large, a stream without an answer). */
  upstreamBadAnswer: (message: string) => fixed('MCP_ERR_UPSTREAM_BAD_ANSWER', message),
  upstreamDown: (message: string, retryAfterSec: number) => fixed('MCP_ERR_UPSTREAM_DOWN', message, undefined, retryAfter(retryAfterSec)),
  /** 403: an upstream that acts for each user (token exchange), called by a caller without a user's OAuth token. */
  userTokenRequired: (upstream: string) =>
    fixed(
      'MCP_ERR_USER_TOKEN_REQUIRED',
      `The upstream server ${upstream} acts for each user: call it with an OAuth access token (an API key, or no token, names no user)`,
      { upstream }
    ),
  /**
   * 403: an upstream sent the caller's own `Authorization` (forwardAuthorization), and the caller's
   * token is DPoP-bound: it works only with a proof signed by the client's key for the URL it goes
   * to, which the gateway cannot make for the upstream's.
   */
  tokenNotForwardable: (upstream: string) =>
    fixed(
      'MCP_ERR_TOKEN_NOT_FORWARDABLE',
      `The upstream server ${upstream} is sent the caller's own token, and a DPoP-bound token cannot be forwarded (its proofs are for this gateway's URL): call with a Bearer token`,
      { upstream }
    ),
  /** 403: the authorization server refused to exchange the caller's token for one of the upstream's; `error` is its OAuth error code. */
  tokenExchangeRefused: (upstream: string, error: string) =>
    fixed('MCP_ERR_TOKEN_EXCHANGE_REFUSED', `The authorization server refused a token for the upstream server ${upstream} (${error})`, { upstream, error }),
  /** 502: no token for the upstream could be had (the authorization server unreachable, failing, or refusing the gateway's own client). */
  tokenExchangeFailed: (upstream: string, why: string) =>
    fixed('MCP_ERR_TOKEN_EXCHANGE_FAILED', `Cannot get a token for the upstream server ${upstream}: the authorization server ${why}`),
  /** The gateway's answer to a request an upstream server sent (no caller to ask, or the call ended): it goes upstream. */
  upstreamRequestRefused: (message: string) => fixed('MCP_ERR_UPSTREAM_REQUEST_REFUSED', message),
  /** An error that crossed instances as its parts (the gateway's round relay), under the name it had. */
  relayed: (e: { name?: string; code: number; message: string; status: number; data?: unknown; headers?: Record<string, string> }) =>
    new McpError(e.code, e.message, e.status, e.data, e.headers, e.name !== undefined && e.name in catalogue ? e.name : 'MCP_ERR_UPSTREAM')
}

/** What went wrong, in words: an Error's message, or whatever was thrown. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** A mistake in how the library is used (bad registration, bad configuration): never sent on the wire. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError'
}

/**
 * The wire error for anything a request may throw that has one: an {@link McpError} as it is, a
 * store's refusal (a limit reached) as the error the client should see; else undefined (a handler's
 * failure, or a bug). The one place where store errors become wire errors, used by both faces and
 * by the core where it tells protocol errors from a tool's own failure.
 */
export function wireErrorOf(err: unknown): McpError | undefined {
  if (err instanceof McpError) return err
  if (!(err instanceof StoreError)) return undefined
  switch (err.code) {
    case 'ERR_STORE_TOO_MANY_SUBSCRIPTIONS':
      // A quota, not a rate: waiting does not help, unsubscribing does.
      return fixed('MCP_ERR_STORE_TOO_MANY_SUBSCRIPTIONS', err.message)
    case 'ERR_STORE_QUOTA':
    case 'ERR_STORE_QUEUE_FULL':
    case 'ERR_STORE_TOO_MANY_TASKS':
    case 'ERR_STORE_FULL':
      return fixed(`MCP_${err.code}`, err.message, undefined, { 'retry-after': retryAfterOf(err) })
    case 'ERR_STORE_NOT_REPLICATED':
    case 'ERR_STORE_UNAVAILABLE':
      return fixed(`MCP_${err.code}`, err.message, undefined, { 'retry-after': '1' })
  }
}

/** Whole seconds until space frees (at least 1), or 5 when the store cannot know (a queue the client empties). */
function retryAfterOf(err: StoreError): string {
  const ms = (err as StoreLimitError).retryAfterMs
  return String(ms === undefined ? 5 : Math.max(1, Math.ceil(ms / 1000)))
}

/** What was thrown or an abort's reason, as an Error (a reason may be any value). */
export function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason))
}
