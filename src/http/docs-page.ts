import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import { openapiDocument } from './tool-operations.js'

/**
 * `GET /docs`: an interactive reference of this server's OpenAPI document (Swagger UI through
 * @fastify/swagger-ui), where "Try it out" calls this server. Every asset comes from the server
 * itself (swagger-ui-dist ships in the package), so the page works with no internet; its requests go
 * to the page's own origin, which the Host and Origin checks accept. Its routes are hidden from the
 * document and public (like the RFC 9728 metadata): a page that needs a token to load could not
 * offer the "Authorize" button that takes one.
 */
export async function registerDocsPage(fastify: FastifyInstance, mcp: McpServer): Promise<void> {
  const document = openapiDocument(fastify, mcp)
  await fastify.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, mcpPublic: true }
    })
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      // The same document as GET /openapi.json, with one operation per tool.
      transformSpecification: () => document(),
      transformSpecificationClone: false,
      theme: { title: `${mcp.serverInfo.title ?? mcp.serverInfo.name}: API reference` },
      uiConfig: { tryItOutEnabled: true, displayRequestDuration: true, defaultModelsExpandDepth: 0, docExpansion: 'list' }
    })
  })
}
