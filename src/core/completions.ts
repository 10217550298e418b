import { errors, wireErrorOf } from '../errors.js'
import type { CompleteBody, CompleteResult } from '../schema/completions.js'
import type { CallContext } from './call-context.js'
import type { Completer } from './definitions.js'
import type { Registry } from './registry.js'
import { finish } from './results.js'

const MAX_VALUES = 100

/** `completion/complete` for a prompt argument or a resource template variable. */
export async function complete(registry: Registry, body: CompleteBody, ctx: CallContext): Promise<CompleteResult> {
  let completer: Completer | undefined
  if (body.ref.type === 'ref/prompt') {
    const prompt = registry.prompts.get(body.ref.name)
    if (prompt === undefined) throw errors.unknownPrompt(body.ref.name)
    completer = prompt.completers.get(body.argument.name)
  } else {
    const template = registry.templates.get(body.ref.uri)
    if (template === undefined) throw errors.unknownResourceTemplate(body.ref.uri)
    completer = template.completers.get(body.argument.name)
  }
  let values: readonly string[] = []
  let total: number | undefined
  let hasMore: boolean | undefined
  if (completer !== undefined) {
    try {
      if (body.context?.arguments !== undefined) ctx.arguments = body.context.arguments
      const out = await completer(body.argument.value, ctx)
      if (Array.isArray(out)) values = out as readonly string[]
      else ({ values, total, hasMore } = out as { values: readonly string[]; total?: number; hasMore?: boolean })
    } catch (err) {
      const wire = wireErrorOf(err)
      if (wire !== undefined) throw wire
      ctx.log.error({ err }, 'completion provider failed')
      throw errors.internal()
    }
  }
  const completion: CompleteResult['completion'] = { values: values.slice(0, MAX_VALUES) }
  if (values.length > MAX_VALUES) {
    completion.total = total ?? values.length
    completion.hasMore = true
  } else {
    if (total !== undefined) completion.total = total
    if (hasMore !== undefined) completion.hasMore = hasMore
  }
  return finish(ctx.era, { completion })
}
