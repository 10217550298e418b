import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import { escapeHtml, securePage } from './page-security.js'
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
  await fastify.register(async (page) => {
    securePage(page)
    page.addHook('onRoute', (route) => {
      route.config = { ...route.config, mcpPublic: true }
    })
    const name = mcp.serverInfo.title ?? mcp.serverInfo.name
    await page.register(swaggerUi, {
      routePrefix: '/docs',
      // Its links are absolute (`/docs/static/...`): under a prefix they must carry it.
      indexPrefix: fastify.prefix,
      // The same document as GET /openapi.json, with one operation per tool.
      transformSpecification: () => document(),
      transformSpecificationClone: false,
      // The name comes from the server or, through a gateway, from an upstream: HTML-escaped.
      theme: { title: `${escapeHtml(name)}: API reference` },
      uiConfig: {
        tryItOutEnabled: true,
        displayRequestDuration: true,
        defaultModelsExpandDepth: 0,
        docExpansion: 'list',
        // No top bar: its Swagger logo is an SVG with an inline <style> (which the policy blocks), and
        // its box that loads other documents has nothing to offer here (the policy blocks other hosts).
        layout: 'BaseLayout'
      }
    })
  })
}
