import { ConfigurationError, McpError, errors, wireErrorOf } from '../errors.js'
import { runRound } from '../mrtr/rounds.js'
import { LazyTarget } from '../mrtr/seal.js'
import type { GetPromptBody } from '../schema/prompts.js'
import type { CallContext } from './call-context.js'
import type { RequestContext } from './request-context.js'
import type { McpServer } from './mcp-server.js'
import { copyOf, finish } from './results.js'
import { describeErrors } from './validation.js'

/** `prompts/get`: required arguments are checked before the handler runs (400 -32602 naming them). */
export async function getPrompt(
  server: McpServer,
  name: string,
  body: GetPromptBody,
  ctx: CallContext
): Promise<Record<string, unknown>> {
  const entry = server.prompts.get(name) ?? server.unlistedPrompt?.(name)
  if (entry === undefined) throw errors.unknownPrompt(name)
  const args = body.arguments ?? {}
  const missing = entry.required.filter((a) => typeof args[a] !== 'string')
  if (missing.length > 0) {
    throw errors.invalidParams(`Missing required argument${missing.length > 1 ? 's' : ''} for prompt ${name}: ${missing.join(', ')}`)
  }
  if (entry.validateArguments !== undefined && !entry.validateArguments(args)) {
    const { message, path } = describeErrors(entry.validateArguments.errors)
    throw errors.invalidParams(`Invalid arguments for prompt ${name}: ${message}`, { path })
  }
  let round
  try {
    round = await runRound(
      server,
      entry.mrtr,
      new LazyTarget('prompts/get', name, args),
      args,
      body,
      ctx,
      async (c) => entry.handler(args as never, c)
    )
  } catch (err) {
    throw handlerFailure(err, ctx, { prompt: name })
  }
  if (round.kind === 'input_required') return round.result
  if (round.kind === 'declined') throw errors.invalidParams(round.message)
  const out = round.value
  const result: Record<string, unknown> =
    typeof out === 'string'
      ? { messages: [{ role: 'user', content: { type: 'text', text: out } }] }
      : Array.isArray(out)
        ? { messages: out }
        : copyOf(out as Record<string, unknown>)
  if (result.description === undefined && entry.definition.description !== undefined) {
    result.description = entry.definition.description
  }
  return finish(ctx.era, result)
}

/** A failure outside a tool: protocol errors pass; anything else is logged and hidden behind a 500. */
export function handlerFailure(err: unknown, ctx: RequestContext, where: Record<string, string>): McpError {
  const wire = wireErrorOf(err)
  if (wire !== undefined) return wire
  ctx.log.error({ err, ...where }, err instanceof ConfigurationError ? 'handler misuses the library' : 'handler failed')
  return errors.internal()
}
