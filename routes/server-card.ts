import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { etagOf, ifNoneMatch } from '../src/core/etag.js'
import { NotModified, errorResponses } from '../src/schema/http.js'
import { AI_CATALOG_MEDIA_TYPE, SERVER_CARD_MEDIA_TYPE, ServerCardSchema, type AiCatalog, type ServerCard } from '../src/schema/server-card.js'

export interface ServerCardRouteOptions {
  card: ServerCard
  /** Relative to the plugin: `<streamable-http-url>/server-card`, the location SEP-2127 reserves. */
  path: string
}

/**
 * What SEP-2127's discovery text asks of a hosted card: any origin may read it (`*`, GET, the two
 * request headers, the ETag exposed), and caches may keep it an hour, revalidating by ETag.
 */
export const CARD_CORS = {
  origin: '*',
  methods: 'GET',
  allowedHeaders: ['Content-Type', 'If-None-Match'],
  exposedHeaders: ['ETag'],
  credentials: false
}
export const CARD_CACHE_CONTROL = 'public, max-age=3600'

/** Send a public document built once: its ETag, an hour's caching, 304 to a client that has it. */
export function sendPublic(request: FastifyRequest, reply: FastifyReply, body: string, etag: string, type: string): FastifyReply {
  reply.header('etag', etag).header('cache-control', CARD_CACHE_CONTROL)
  if (ifNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send()
  return reply.type(type).send(body)
}

/**
 * The MCP Server Card (SEP-2127, an experimental draft): public like the RFC 9728 metadata
 * (`mcpPublic`), readable from any origin (`mcpAnyOrigin`: the Origin check does not apply, CORS
 * answers `*`), serialized once.
 */
const serverCard: FastifyPluginAsyncTypebox<ServerCardRouteOptions> = async (fastify, { card, path }) => {
  const body = JSON.stringify(card)
  const etag = etagOf(body)
  const config = { mcpPublic: true, mcpAnyOrigin: true, cors: CARD_CORS }
  fastify.get(
    path,
    {
      config,
      schema: {
        operationId: 'serverCard',
        summary: 'MCP Server Card (SEP-2127, experimental)',
        description:
          'Experimental: SEP-2127 is a draft and this document may change with it. Who this server is and where to connect (its Streamable HTTP endpoint and protocol versions), public and cacheable. Advisory: `server/discover` is authoritative.',
        tags: ['meta'],
        security: [],
        response: { 200: { description: 'The Server Card.', content: { [SERVER_CARD_MEDIA_TYPE]: { schema: ServerCardSchema } } }, 304: NotModified, ...errorResponses() }
      }
    },
    (request, reply) => {
      sendPublic(request, reply, body, etag, SERVER_CARD_MEDIA_TYPE)
    }
  )
  // A preflight (a script that sends If-None-Match) is answered by CORS in its hook with this route's options.
  /* c8 ignore next */
  fastify.options(path, { config, schema: { hide: true } }, (_request, reply) => reply.callNotFound())
}

export default serverCard

/**
 * `/.well-known/ai-catalog.json` (experimental): the AI Catalog that SEP-2127 points domain-level
 * discovery at, listing every mount's card. At the app's root, outside the mounts (so none of their
 * hooks): CORS is written here. Built on the first request, once every mount has registered its card.
 */
export const aiCatalogRoute: FastifyPluginAsyncTypebox<{ cards: () => AiCatalog }> = async (fastify, { cards }) => {
  let built: { body: string; etag: string } | undefined
  const cors = (reply: FastifyReply) =>
    reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', 'ETag')
  fastify.get('/.well-known/ai-catalog.json', { schema: { hide: true } }, (request, reply) => {
    if (built === undefined) {
      const body = JSON.stringify(cards())
      built = { body, etag: etagOf(body) }
    }
    return sendPublic(request, cors(reply), built.body, built.etag, AI_CATALOG_MEDIA_TYPE)
  })
  fastify.options('/.well-known/ai-catalog.json', { schema: { hide: true } }, (_request, reply) =>
    cors(reply).header('access-control-allow-methods', 'GET').header('access-control-allow-headers', 'Content-Type, If-None-Match').code(204).send()
  )
}
