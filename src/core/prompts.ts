import { McpError, errors } from '../errors.js'
import type { RetryableContext } from './definitions.js'
import { guardInputRequired } from './mrtr.js'
import type { Registry } from './registry.js'
import { finish, isInputRequired } from './results.js'

/** `prompts/get`: required arguments are checked before the handler runs (400 -32602 naming them). */
export async function getPrompt(
  registry: Registry,
  name: string,
  args: Record<string, string>,
  ctx: RetryableContext
): Promise<Record<string, unknown>> {
  const entry = registry.prompts.get(name)
  if (entry === undefined) throw errors.notFound(`Unknown prompt: ${name}`)
  const missing = entry.required.filter((a) => typeof args[a] !== 'string')
  if (missing.length > 0) {
    throw errors.invalidParams(`Missing required argument${missing.length > 1 ? 's' : ''} for prompt ${name}: ${missing.join(', ')}`)
  }
  let out
  try {
    out = await entry.handler(args as never, ctx)
  } catch (err) {
    if (err instanceof McpError) throw err
    ctx.log.error({ err, prompt: name }, 'prompt handler failed')
    throw errors.internal()
  }
  if (isInputRequired(out)) return guardInputRequired(out, ctx)
  const result: Record<string, unknown> =
    typeof out === 'string' ? { messages: [{ role: 'user', content: { type: 'text', text: out } }] }
    : Array.isArray(out) ? { messages: out }
    : { ...out }
  if (result.description === undefined && entry.definition.description !== undefined) {
    result.description = entry.definition.description
  }
  return finish(ctx.era, result)
}
