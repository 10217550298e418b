import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { mcpPlugin, type McpPluginOptions } from './app.js'
import { Header } from './headers.js'

export interface BuildServerOptions extends McpPluginOptions {
  /** Fastify logger option (default: info-level JSON logs). */
  logger?: FastifyServerOptions['logger']
  /** Largest request body in bytes (default 1 MiB); beyond it, 413. */
  bodyLimit?: number
  /** Mount the MCP routes under this prefix (default: the root). */
  prefix?: string
}

/**
 * A Fastify instance serving MCP over Pure HTTP, not yet listening: add your own plugins, then
 * `listen()`. `Mcp-Request-Id` is Fastify's request id, so logs and responses share it.
 * @example
 * const app = await buildServer({ mcp })
 * await app.listen({ host: '127.0.0.1', port: 3000 })
 */
export async function buildServer(options: BuildServerOptions): Promise<FastifyInstance> {
  const { logger, bodyLimit, prefix, ...plugin } = options
  const app = Fastify({
    logger: logger ?? { level: 'info' },
    bodyLimit: bodyLimit ?? 1024 * 1024,
    requestIdHeader: Header.requestId,
    genReqId: () => randomUUID(),
    routerOptions: { maxParamLength: 4096 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } }
  }).withTypeProvider<TypeBoxTypeProvider>()
  await app.register(mcpPlugin, prefix === undefined ? plugin : { ...plugin, prefix })
  return app
}
