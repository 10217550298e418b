import type { CallContext } from '../core/call-context.js'
import { REST_ROUTES, type At, type RestRoute } from '../methods.js'
import type { Era } from '../protocol.js'

/**
 * A REST route of the method table (src/methods.ts), by its operationId: the route plugin registers
 * it with this method and URL, so that a route cannot disagree with the table.
 */
export function restRoute(operationId: string): RestRoute {
  const route = REST_ROUTES.get(operationId)
  if (route === undefined) throw new Error(`No REST route ${operationId} in the method table`)
  return route
}

/** The `At` of a REST request whose context is built (or being built). */
export function restAt(era: Era, ctx: CallContext | Promise<CallContext>): At {
  return { era, context: () => ctx }
}

const noContext = (): never => {
  throw new Error('This method takes no context')
}

/** The `At` of a method that needs no context (lists, discover, ping): one per era, made once. */
export const NO_CONTEXT: Readonly<Record<Era, At>> = {
  legacy: { era: 'legacy', context: noContext },
  modern: { era: 'modern', context: noContext }
}
