import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import { DOCS_CONSOLE_LINK_SCRIPT, DOCS_TOKEN_SCRIPT, DOCS_TOKEN_STYLE } from './docs-token.js'
import { escapeHtml, securePage } from './page-security.js'
import { openapiDocument } from './tool-operations.js'

/** What a page script reaches in the browser (see docs-token.ts). */
interface PageGlobals {
  mcpDocs: { request(request: object): object; response(response: object): object }
}

/**
 * `GET /docs`: an interactive reference of this server's OpenAPI document (Swagger UI through
 * @fastify/swagger-ui), where "Try it out" calls this server. Every asset comes from the server
 * itself (swagger-ui-dist ships in the package), so the page works with no internet; its requests go
 * to the page's own origin, which the Host and Origin checks accept. The shell (the HTML page and
 * its script and style files) is public, like the RFC 9728 metadata: a page that needs a token to
 * load could not ask for one. The document (`/docs/json`, `/docs/yaml`) is the catalogue, and needs
 * what every other route needs; with authentication on, the shell names no server either.
 */
export async function registerDocsPage(fastify: FastifyInstance, mcp: McpServer, authenticated: boolean): Promise<void> {
  const document = openapiDocument(fastify, mcp)
  fastify.addHook('onClose', async () => document.stop())
  const docs = `${fastify.prefix}/docs`
  await fastify.register(async (page) => {
    securePage(page)
    page.addHook('onRoute', (route) => {
      // An allow-list of the shell, so that any other route the page plugin adds stays protected.
      if (route.url === docs || route.url === `${docs}/` || route.url.startsWith(`${docs}/static/`)) route.config = { ...route.config, mcpPublic: true }
    })
    const name = authenticated ? undefined : (mcp.serverInfo.title ?? mcp.serverInfo.name)
    await page.register(swaggerUi, {
      routePrefix: '/docs',
      // Its links are absolute (`/docs/static/...`): under a prefix they must carry it.
      indexPrefix: fastify.prefix,
      // The same document as GET /openapi.json, with one operation per tool.
      transformSpecification: () => document(),
      transformSpecificationClone: false,
      // The name comes from the server or, through a gateway, from an upstream: HTML-escaped.
      theme: {
        title: name === undefined ? 'API reference' : `${escapeHtml(name)}: API reference`,
        js: [
          { filename: 'token.js', content: DOCS_TOKEN_SCRIPT },
          { filename: 'console-link.js', content: DOCS_CONSOLE_LINK_SCRIPT }
        ],
        css: [{ filename: 'token.css', content: DOCS_TOKEN_STYLE }]
      },
      uiConfig: {
        tryItOutEnabled: true,
        displayRequestDuration: true,
        defaultModelsExpandDepth: 0,
        docExpansion: 'list',
        // No top bar: its Swagger logo is an SVG with an inline <style> (which the policy blocks), and
        // its box that loads other documents has nothing to offer here (the policy blocks other hosts).
        layout: 'BaseLayout',
        persistAuthorization: true,
        // Serialized into the page's initializer as their source text: browser globals only. They run
        // in the browser alone (test/docs/docs-page.test.ts drives it), never in this process.
        /* c8 ignore next 2 */
        requestInterceptor: (request: object) => (globalThis as unknown as PageGlobals).mcpDocs.request(request),
        responseInterceptor: (response: object) => (globalThis as unknown as PageGlobals).mcpDocs.response(response)
      }
    })
  })
}
