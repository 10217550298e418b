import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProtectedResourceMetadataSchema, type ProtectedResourceMetadata } from '../src/schema/auth.js'
import { errorResponses } from '../src/schema/http.js'
import type { McpServer } from '../src/core/mcp-server.js'

export interface WellKnownOptions {
  resource: string
  authorizationServers: readonly string[]
  /** When absent, the scopes the registered tools require, kept current as tools come and go. */
  scopesSupported?: readonly string[] | undefined
  /** Also serve the document here (RFC 9728's path-inserted URL of an audience with a path), relative to the plugin. */
  alsoAt?: string | undefined
  /** Serve only `alsoAt`, not the plugin's own well-known path (buildServer's root copy). */
  onlyAlso?: boolean
  /** The catalogue whose tool scopes the document lists (default: the plugin's). */
  mcp?: McpServer
  /** With DPoP on: the proof algorithms, and whether every token must be bound. */
  dpop?: { algorithms: readonly string[]; required: boolean } | undefined
}

/**
 * `/.well-known/oauth-protected-resource` (RFC 9728): how a client finds the authorization server.
 * Public by nature: its route sets `config.mcpPublic`, which the authentication hook honours.
 */
const wellKnown: FastifyPluginAsyncTypebox<WellKnownOptions> = async (fastify, opts) => {
  const mcp = opts.mcp ?? fastify.mcp
  let body: ProtectedResourceMetadata | undefined
  const unsubscribe = mcp.onChange((kind) => {
    if (kind === 'tools') body = undefined
  })
  fastify.addHook('onClose', async () => unsubscribe())
  const document = (): ProtectedResourceMetadata => {
    const scopes = opts.scopesSupported ?? [...new Set([...mcp.tools.values()].flatMap((t) => t.scopes))].sort()
    return {
      resource: opts.resource,
      authorization_servers: [...opts.authorizationServers],
      scopes_supported: [...scopes],
      bearer_methods_supported: ['header'],
      ...(opts.dpop === undefined
        ? {}
        : { dpop_signing_alg_values_supported: [...opts.dpop.algorithms], ...(opts.dpop.required ? { dpop_bound_access_tokens_required: true } : {}) })
    }
  }

  if (opts.onlyAlso !== true) {
    fastify.get(
      '/.well-known/oauth-protected-resource',
      {
        config: { mcpPublic: true },
        schema: {
          operationId: 'oauthProtectedResource',
          summary: 'OAuth 2.0 Protected Resource Metadata (RFC 9728)',
          tags: ['meta'],
          security: [],
          response: { 200: ProtectedResourceMetadataSchema, ...errorResponses() }
        }
      },
      async () => (body ??= document())
    )
  }
  if (opts.alsoAt !== undefined) {
    fastify.get(opts.alsoAt, { config: { mcpPublic: true }, schema: { hide: true } }, async () => (body ??= document()))
  }
}

export default wellKnown
