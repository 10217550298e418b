import type { FastifyInstance, FastifyPluginAsync, HTTPMethods } from 'fastify'
import fp from 'fastify-plugin'
import { errors } from '../errors.js'
import { sendError } from '../http/error-reply.js'

/**
 * A known path asked with a wrong method is 405 with `Allow`, not 404: the plugin collects every
 * method of every path as routes are added, and `answer()`, called once every route is registered,
 * adds a route per path for the other methods.
 * @example
 * const allowed = await methodsAllowed(fastify)
 * // ... register the routes ...
 * await allowed.answer()
 */
export async function methodsAllowed(fastify: FastifyInstance): Promise<{ answer(): Promise<void> }> {
  const allowed = new Map<string, Set<string>>()
  await fastify.register(fp(collect, { name: 'mcp-methods-allowed', fastify: '5.x' }), { allowed })
  return {
    answer: async () => {
      await fastify.register(async (f: FastifyInstance) => {
        // Every method the server knows (TRACE, PROPFIND, and what buildServer adds): CONNECT is a tunnel.
        const methods = f.supportedMethods.filter((m) => m !== 'CONNECT') as HTTPMethods[]
        for (const [url, set] of [...allowed]) {
          const allow = [...set].sort()
          f.route({
            method: methods.filter((m) => !set.has(m)),
            url,
            schema: { hide: true },
            handler: (_request, reply) => sendError(reply, errors.methodNotAllowed(allow))
          })
        }
      })
    }
  }
}

const collect: FastifyPluginAsync<{ allowed: Map<string, Set<string>> }> = async (fastify, { allowed }) => {
  fastify.addHook('onRoute', (route) => {
    // The JSON-RPC endpoint answers its own 405s, in the JSON-RPC envelope.
    if (route.config?.mcpJsonRpc === true) return
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const url = route.url.slice(fastify.prefix.length)
    const set = allowed.get(url) ?? new Set<string>()
    for (const m of methods) set.add(m)
    allowed.set(url, set)
  })
}
