import { McpError, errors, messageOf } from '../errors.js'
import type { Cancellation } from '../core/cancel.js'

const STATUS: Record<number, number> = { [-32600]: 400, [-32601]: 404, [-32602]: 400, [-32002]: 404 }

/** The upstream request was cancelled because our caller cancelled (not a wire error of its own). */
export class Cancelled extends Error {
  override readonly name = 'Cancelled'
}

/** The upstream's own error answer to a request of ours (its code, words and data, as it said them). */
export class UpstreamAnswer extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: unknown
  ) {
    super(message)
  }
}

/**
 * An upstream failure as the error our client gets: the upstream's own error answer keeps its code,
 * words and data, with the status the binding gives the code (an internal error, or a code that is
 * not an integer, is a 502 that names the upstream).
 */
export function upstreamError(err: unknown, name: string, signal?: Cancellation): McpError | Cancelled {
  if (err instanceof McpError) return err
  // Cancelled by our caller: a tool's result says so (the caller asked for it; nothing failed here).
  if (signal?.aborted === true) return new Cancelled(`Cancelled: ${messageOf(signal.reason)}`)
  if (err instanceof UpstreamAnswer && Number.isInteger(err.code) && err.code !== -32603) {
    return errors.upstream(err.code, err.message, STATUS[err.code] ?? 502, err.data)
  }
  return errors.upstreamFailed(`The upstream server ${name} failed: ${messageOf(err)}`)
}

/**
 * 429: a principal holds `max` open rounds already; `Retry-After` is when the first of them expires
 * at the latest (`firstExpiry`, epoch ms), freeing its place.
 */
export function tooManyRounds(max: number, firstExpiry: number): McpError {
  const after = Math.max(1, Math.ceil((firstExpiry - Date.now()) / 1000))
  return errors.tooManyRounds(max, after)
}
