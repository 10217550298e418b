import { McpError, errors } from '../errors.js'
import { runRound, type RetryParams } from '../mrtr/rounds.js'
import type { CallContext } from './call-context.js'
import { RESUME, finishResumable, isResumable } from '../mrtr/resume.js'
import { openResume } from '../mrtr/resume.js'
import type { McpServer } from './mcp-server.js'
import { handlerFailure } from './prompts.js'
import { copyOf, finishCacheable } from './results.js'

/**
 * `resources/read`: a registered resource by exact URI, else the first template that matches, else
 * what the catalogue makes of an unlisted URI (`unlistedResource`).
 * A handler returns text, bytes or whole contents; `undefined` means the resource does not exist.
 */
export async function readResource(
  server: McpServer,
  uri: string,
  params: RetryParams,
  ctx: CallContext
): Promise<Record<string, unknown>> {
  const exact = server.resources.get(uri)
  let found
  if (exact !== undefined) {
    found = { entry: exact, vars: {}, call: (c: Parameters<typeof exact.handler>[1]) => exact.handler(uri, c) }
  } else {
    for (const t of server.templates.values()) {
      const vars = t.template.match(uri)
      if (vars !== undefined) {
        found = { entry: t, vars, call: (c: Parameters<typeof t.handler>[2]) => t.handler(uri, vars, c) }
        break
      }
    }
  }
  if (found === undefined) {
    const unlisted = server.unlistedResource?.(uri)
    if (unlisted === undefined) throw resourceNotFound(uri, ctx)
    found = { entry: unlisted, vars: {}, call: (c: Parameters<typeof unlisted.handler>[1]) => unlisted.handler(uri, c) }
  }
  const { entry, vars, call } = found
  // The URI is the target; a template's variables are part of it, so no argument digest is needed.
  const binding = { method: 'resources/read', target: uri, args: '' }
  const resumed = openResume(server.sealer, binding, ctx)
  let round
  try {
    ctx.resumed = resumed
    round = await runRound(server, entry.mrtr, binding, vars, params, ctx, async (c) => call(c))
  } catch (err) {
    throw handlerFailure(err, ctx, { uri })
  }
  if (round.kind === 'input_required') return round.result
  if (round.kind === 'declined') throw errors.invalidParams(round.message)
  const out = round.value
  if (out === undefined) throw resourceNotFound(uri, ctx)
  const mimeType = entry.definition.mimeType
  const result: Record<string, unknown> =
    typeof out === 'string'
      ? { contents: [withMime({ uri, text: out }, mimeType)] }
      : out instanceof Uint8Array
        ? { contents: [withMime({ uri, blob: Buffer.from(out).toString('base64') }, mimeType)] }
        : copyOf(out as Record<string, unknown>)
  return finishCacheable(ctx.era, isResumable(out) ? finishResumable(server.sealer, binding, ctx, result, out[RESUME]) : result, server.cacheHints)
}

/** Resource not found: -32602 from 2026-07-28 on, -32002 before; 404 either way. */
export function resourceNotFound(uri: string, ctx: { era: 'legacy' | 'modern' }): McpError {
  return errors.resourceNotFound(uri, ctx.era)
}

/** `c` (a content block made just before) with the resource's mimeType, when it has one. */
function withMime<T extends object>(c: T, mimeType: string | undefined): T & { mimeType?: string } {
  if (mimeType !== undefined) (c as T & { mimeType?: string }).mimeType = mimeType
  return c
}
