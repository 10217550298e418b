import swagger from '@fastify/swagger'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import { METHODS, REST_ROUTES } from '../methods.js'
import { LATEST_VERSION, SUPPORTED_VERSIONS, era } from '../protocol.js'
import { ErrorSchema } from '../schema/common.js'
import { CompleteResultSchema } from '../schema/completions.js'
import {
  AudioContentSchema,
  BlobResourceContentsSchema,
  ContentBlockSchema,
  EmbeddedResourceSchema,
  ImageContentSchema,
  ResourceContentsSchema,
  ResourceLinkSchema,
  TextContentSchema,
  TextResourceContentsSchema
} from '../schema/content.js'
import { DiscoverResultSchema, InitializeResultSchema } from '../schema/lifecycle.js'
import { InputRequestSchema, InputRequiredResultSchema } from '../schema/mrtr.js'
import { GetPromptResultSchema, ListPromptsResultSchema, PromptMessageSchema, PromptSchema } from '../schema/prompts.js'
import {
  ListResourceTemplatesResultSchema,
  ListResourcesResultSchema,
  ReadResourceResultSchema,
  ResourceSchema,
  ResourceTemplateSchema
} from '../schema/resources.js'
import { CreateTaskResultSchema, DetailedTaskSchema } from '../schema/tasks.js'
import { CallToolResultSchema, ListToolsResultSchema, ToolSchema } from '../schema/tools.js'

/**
 * The schemas the OpenAPI document names in `components.schemas` (each has an `$id`): results,
 * content blocks and the error object, so a generated client has a `CallToolResult` or `McpError`
 * type instead of the same union inlined at every use. Only result schemas are here: request bodies
 * are compiled by Ajv, which needs no names.
 */
export const SHARED_SCHEMAS: readonly TSchema[] = [
  ErrorSchema,
  TextContentSchema,
  ImageContentSchema,
  AudioContentSchema,
  ResourceLinkSchema,
  TextResourceContentsSchema,
  BlobResourceContentsSchema,
  ResourceContentsSchema,
  EmbeddedResourceSchema,
  ContentBlockSchema,
  InputRequestSchema,
  InputRequiredResultSchema,
  ToolSchema,
  ListToolsResultSchema,
  CallToolResultSchema,
  CreateTaskResultSchema,
  DetailedTaskSchema,
  PromptSchema,
  ListPromptsResultSchema,
  PromptMessageSchema,
  GetPromptResultSchema,
  ResourceSchema,
  ResourceTemplateSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesResultSchema,
  ReadResourceResultSchema,
  InitializeResultSchema,
  DiscoverResultSchema,
  CompleteResultSchema
]

export interface OpenApiSetup {
  /** The server's name, title and version: the document's `info`. */
  mcp: McpServer
  /** With OAuth on: the RFC 9728 metadata URL, named in the bearer scheme's description. */
  metadataUrl?: string | undefined
  /** Whether static API keys are accepted (as bearer tokens). */
  apiKeys: boolean
  /** With DPoP-bound tokens accepted: whether only they are (API keys stay bearer tokens). */
  dpop?: { required: boolean } | undefined
}

type Scheme = { type: 'http'; scheme: string; bearerFormat?: string; description: string }

/**
 * The security schemes and requirement: `bearer` (an API key or an OAuth access token), and `dpop`
 * (RFC 9449: `Authorization: DPoP <token>` with a `DPoP` proof header) when DPoP is on; either one
 * satisfies an operation. With DPoP required, OAuth tokens are DPoP only.
 */
function securityOf({ metadataUrl, apiKeys, dpop }: Omit<OpenApiSetup, 'mcp'>): { components?: { securitySchemes: Record<string, Scheme> }; security: Record<string, never[]>[] } {
  if (metadataUrl === undefined && !apiKeys) return { security: [] }
  const schemes: Record<string, Scheme> = {}
  if (dpop?.required !== true || apiKeys) schemes.bearer = bearerScheme(dpop?.required === true ? undefined : metadataUrl, apiKeys)
  // DPoP is an OAuth option, so its metadata URL is known.
  if (dpop !== undefined) {
    schemes.dpop = { type: 'http', scheme: 'DPoP', description: `A DPoP-bound OAuth 2.1 access token, with a DPoP proof in the DPoP header of each request; metadata: ${metadataUrl!}` }
  }
  return { components: { securitySchemes: schemes }, security: Object.keys(schemes).map((name) => ({ [name]: [] })) }
}

/** The `bearer` security scheme: an OAuth access token (a JWT), an API key, or either. */
function bearerScheme(metadataUrl: string | undefined, apiKeys: boolean): { type: 'http'; scheme: string; bearerFormat?: string; description: string } {
  if (metadataUrl === undefined) return { type: 'http', scheme: 'bearer', description: 'API key' }
  const oauth = `OAuth 2.1 access token; metadata: ${metadataUrl}`
  return apiKeys ? { type: 'http', scheme: 'bearer', description: `API key, or ${oauth}` } : { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: oauth }
}

/**
 * Register @fastify/swagger on the plugin's instance with the document's fixed parts: `info`, tags,
 * `servers` (relative, so the document is right wherever it is served), `security` (bearer when
 * OAuth or API keys are on, none otherwise) and the shared schemas, named by their `$id`.
 */
export async function registerOpenApi(fastify: FastifyInstance, { mcp, metadataUrl, apiKeys, dpop }: OpenApiSetup): Promise<void> {
  for (const schema of SHARED_SCHEMAS) fastify.addSchema(schema)
  const info = mcp.serverInfo
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: info.title ?? info.name,
        version: info.version,
        description: 'Model Context Protocol methods as HTTP resources (the Pure HTTP transport, SEP-1612).',
        license: { name: 'MIT', identifier: 'MIT' }
      },
      // Relative: the server this document is served from. The paths carry the mount prefix.
      servers: [{ url: '/', description: 'This server' }],
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
      ...securityOf({ metadataUrl, apiKeys, dpop })
    },
    // Shared schemas are named by their $id (the default names them def-0, def-1, ...).
    refResolver: { buildLocalReference: (json) => json.$id as string },
    transform: ({ schema, url }) => ({ schema: removedInLatest(schema), url })
  })
}

const LEGACY_VERSIONS = SUPPORTED_VERSIONS.filter((v) => era(v) === 'legacy').join(' and ')

/**
 * The operation of a method the newest revision removed is `deprecated`, and says which clients it
 * serves and what the others use (the table's `instead`): a 2026-07-28 request gets 404 there.
 */
function removedInLatest<S extends { operationId?: unknown } | undefined>(schema: S): S {
  const route = typeof schema?.operationId === 'string' ? REST_ROUTES.get(schema.operationId) : undefined
  if (route === undefined) return schema
  const { eras, instead } = METHODS[route.name]
  if (eras.includes('modern')) return schema
  // Every removed method says what instead (test/faces/method-table.test.ts holds the table to it).
  const description = `Only for clients of ${LEGACY_VERSIONS} (Mcp-Protocol-Version): MCP ${LATEST_VERSION} removed ${route.name} (404 -32601); ${instead!}.`
  return { ...schema, deprecated: true, description }
}
