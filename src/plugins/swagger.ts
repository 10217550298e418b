import swagger from '@fastify/swagger'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { OAuthSetup } from '../auth/oauth.js'
import type { Implementation } from '../schema/common.js'

export interface OpenApiOptions {
  serverInfo: Implementation
  oauth: OAuthSetup | undefined
}

/**
 * The OpenAPI 3.1 document of the MCP routes (`@fastify/swagger`, from the routes' TypeBox schemas);
 * `GET /openapi.json` (routes/openapi.ts) serves it. One typed operation per tool is added by
 * src/http/tool-operations.ts.
 */
const openapi: FastifyPluginAsync<OpenApiOptions> = async (fastify, opts) => {
  const oauth = opts.oauth
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: opts.serverInfo.title ?? opts.serverInfo.name,
        version: opts.serverInfo.version,
        description: 'Model Context Protocol methods as HTTP resources (the Pure HTTP transport, SEP-1612).',
        license: { name: 'MIT', identifier: 'MIT' }
      },
      tags: [
        { name: 'lifecycle', description: 'initialize, server/discover, ping, logging/setLevel' },
        { name: 'tools', description: 'tools/list and tools/call by name' },
        { name: 'tool calls', description: 'One typed operation per registered tool' },
        { name: 'prompts', description: 'prompts/list and prompts/get' },
        { name: 'resources', description: 'resources/list, templates, read, subscribe' },
        { name: 'completions', description: 'completion/complete' },
        { name: 'messaging', description: 'Notifications and server-to-client requests' },
        { name: 'tasks', description: 'The Tasks extension: long work polled to completion' },
        { name: 'meta', description: 'This document' }
      ],
      ...(oauth === undefined
        ? {}
        : {
            components: {
              securitySchemes: {
                bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: `OAuth 2.1 access token; metadata: ${oauth.metadataUrl}` }
              }
            },
            security: [{ bearer: [] }]
          })
    }
  })
}

export default fp(openapi, { name: 'mcp-openapi', fastify: '5.x' })
