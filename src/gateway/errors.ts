import { McpError, errors, messageOf } from '../errors.js'

const STATUS: Record<number, number> = { [-32600]: 400, [-32601]: 404, [-32602]: 400, [-32002]: 404 }

/** The upstream request was cancelled because our caller cancelled (not a wire error of its own). */
export class Cancelled extends Error {
  override readonly name = 'Cancelled'
}

/** An upstream failure as the error our client gets. */
export function upstreamError(err: unknown, name: string, signal?: AbortSignal): McpError | Cancelled {
  if (err instanceof McpError) return err
  const code = (err as { code?: unknown }).code
  // Cancelled by our caller: a tool's result says so (the caller asked for it; nothing failed here).
  if (signal?.aborted === true) return new Cancelled(`Cancelled: ${messageOf(signal.reason)}`)
  if (code === -32000) return errors.upstreamClosed(name)
  if (code === -32001) return errors.upstreamTimeout(name)
  if (typeof code === 'number' && Number.isInteger(code) && code !== -32603) {
    const data = (err as { data?: unknown }).data
    // The SDK prefixes "MCP error <code>: "; the client gets the upstream's own words.
    const message = messageOf(err).replace(/^MCP error -?\d+: /, '')
    return errors.upstream(code, message, STATUS[code] ?? 502, data)
  }
  return errors.upstreamFailed(`The upstream server ${name} failed: ${messageOf(err).replace(/^MCP error -?\d+: /, '')}`)
}

/**
 * 429: a principal holds `max` open rounds already; `Retry-After` is when the first of them expires
 * at the latest (`firstExpiry`, epoch ms), freeing its place.
 */
export function tooManyRounds(max: number, firstExpiry: number): McpError {
  const after = Math.max(1, Math.ceil((firstExpiry - Date.now()) / 1000))
  return errors.tooManyRounds(max, after)
}
