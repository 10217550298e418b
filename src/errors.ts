import { StoreError, type StoreLimitError } from './store/store-errors.js'

/**
 * The one error catalogue. A {@link McpError} is a wire error: it carries the JSON-RPC code, the HTTP
 * status and a stable name, and both faces (Pure HTTP and JSON-RPC) render it as is. Anything else
 * thrown while serving a request is a programming error and becomes an opaque 500 -32603.
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

export class McpError extends Error {
  override readonly name = 'McpError'
  constructor(
    readonly code: number,
    message: string,
    readonly status: number,
    readonly data?: unknown,
    /** Extra response headers (Allow, Retry-After, WWW-Authenticate). */
    readonly headers?: Record<string, string>
  ) {
    super(message)
  }

  toJSON(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data }
  }
}

/** Constructors for every wire error the server answers; routes and core never spell a code themselves. */
export const errors = {
  parse: (message = 'Parse error: the body is not valid JSON') => new McpError(ErrorCode.parseError, message, 400),
  invalidRequest: (message: string) => new McpError(ErrorCode.invalidRequest, message, 400),
  invalidParams: (message: string, data?: unknown) => new McpError(ErrorCode.invalidParams, message, 400, data),
  methodNotFound: (message = 'Method not found') => new McpError(ErrorCode.methodNotFound, message, 404),
  methodNotAllowed: (allow: string[]) =>
    new McpError(ErrorCode.methodNotFound, 'Method not allowed', 405, { allow }, { allow: allow.join(', ') }),
  notFound: (message: string, code: number = ErrorCode.invalidParams, data?: unknown) =>
    new McpError(code, message, 404, data),
  headerMismatch: (message: string) => new McpError(ErrorCode.headerMismatch, message, 400),
  missingCapability: (requiredCapabilities: Record<string, unknown>, message = 'Missing required client capability') =>
    new McpError(ErrorCode.missingCapability, message, 400, { requiredCapabilities }),
  unsupportedVersion: (requested: string, supported: readonly string[]) =>
    new McpError(ErrorCode.unsupportedVersion, `Unsupported protocol version: ${requested}`, 400, {
      supported,
      requested
    }),
  payloadTooLarge: (message = 'Request body too large') => new McpError(ErrorCode.invalidRequest, message, 413),
  unsupportedMediaType: (message = 'Content-Type must be application/json') =>
    new McpError(ErrorCode.invalidRequest, message, 415),
  internal: () => new McpError(ErrorCode.internalError, 'Internal error', 500),
  /** 401: no usable credentials; `challenge` is the `WWW-Authenticate` value (RFC 6750). */
  unauthorized: (message: string, challenge: string) =>
    new McpError(ErrorCode.invalidRequest, message, 401, undefined, { 'www-authenticate': challenge }),
  /** 403: the request is understood and refused (a Host or Origin not allowed). */
  forbidden: (message: string) => new McpError(ErrorCode.invalidRequest, message, 403),
  /** 403: the token lacks a scope the target requires (RFC 6750 `insufficient_scope`). */
  insufficientScope: (what: string, scopes: readonly string[]) =>
    new McpError(ErrorCode.invalidRequest, `Insufficient scope: ${what} requires ${scopes.join(' ')}`, 403, undefined, {
      'www-authenticate': `Bearer error="insufficient_scope", scope="${scopes.join(' ')}"`
    }),
  /** 503: a dependency the server needs (the authorization server's keys) cannot be reached. */
  unavailable: (message: string, retryAfterSec: number) =>
    new McpError(ErrorCode.internalError, message, 503, undefined, { 'retry-after': String(retryAfterSec) })
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
      return new McpError(ErrorCode.invalidParams, err.message, 400)
    case 'ERR_STORE_QUOTA':
      return new McpError(ErrorCode.invalidRequest, err.message, 429, undefined, { 'retry-after': retryAfter(err) })
    case 'ERR_STORE_QUEUE_FULL':
    case 'ERR_STORE_TOO_MANY_TASKS':
    case 'ERR_STORE_FULL':
      return new McpError(ErrorCode.internalError, err.message, 503, undefined, { 'retry-after': retryAfter(err) })
    case 'ERR_STORE_NOT_REPLICATED':
    case 'ERR_STORE_UNAVAILABLE':
      return new McpError(ErrorCode.internalError, err.message, 503, undefined, { 'retry-after': '1' })
  }
}

/** Whole seconds until space frees (at least 1), or 5 when the store cannot know (a queue the client empties). */
function retryAfter(err: StoreError): string {
  const ms = (err as StoreLimitError).retryAfterMs
  return String(ms === undefined ? 5 : Math.max(1, Math.ceil(ms / 1000)))
}

/** What was thrown or an abort's reason, as an Error (a reason may be any value). */
export function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason))
}
