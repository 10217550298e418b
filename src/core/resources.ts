import { ErrorCode, McpError, errors } from '../errors.js'
import type { RetryableContext } from './definitions.js'
import { guardInputRequired } from './mrtr.js'
import type { McpServer } from './mcp-server.js'
import { finishCacheable, isInputRequired } from './results.js'

/**
 * `resources/read`: a registered resource by exact URI, else the first template that matches.
 * A handler returns text, bytes or whole contents; `undefined` means the resource does not exist.
 */
export async function readResource(server: McpServer, uri: string, ctx: RetryableContext): Promise<Record<string, unknown>> {
  let mimeType: string | undefined
  let out
  try {
    const exact = server.resources.get(uri)
    if (exact !== undefined) {
      mimeType = exact.definition.mimeType
      out = await exact.handler(uri, ctx)
    } else {
      for (const t of server.templates.values()) {
        const vars = t.template.match(uri)
        if (vars === undefined) continue
        mimeType = t.definition.mimeType
        out = await t.handler(uri, vars, ctx)
        break
      }
    }
  } catch (err) {
    if (err instanceof McpError) throw err
    ctx.log.error({ err, uri }, 'resource handler failed')
    throw errors.internal()
  }
  if (out === undefined) throw resourceNotFound(uri, ctx)
  if (isInputRequired(out)) return guardInputRequired(out, ctx)
  const result: Record<string, unknown> =
    typeof out === 'string' ? { contents: [withMime({ uri, text: out }, mimeType)] }
    : out instanceof Uint8Array ? { contents: [withMime({ uri, blob: Buffer.from(out).toString('base64') }, mimeType)] }
    : { ...out }
  return finishCacheable(ctx.era, result, server.cacheHints)
}

/** Resource not found: -32602 from 2026-07-28 on, -32002 before; 404 either way. */
export function resourceNotFound(uri: string, ctx: { era: 'legacy' | 'modern' }): McpError {
  return errors.notFound(
    `Resource not found: ${uri}`,
    ctx.era === 'modern' ? ErrorCode.invalidParams : ErrorCode.resourceNotFoundLegacy,
    { uri }
  )
}

function withMime<T extends object>(c: T, mimeType: string | undefined): T & { mimeType?: string } {
  return mimeType === undefined ? c : { ...c, mimeType }
}
