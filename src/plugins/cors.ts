import cors from '@fastify/cors'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { HostOriginPolicy } from '../auth/origin.js'
import { ConfigurationError } from '../errors.js'
import { CORS_REQUEST_HEADERS, CORS_RESPONSE_HEADERS } from '../headers.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** @fastify/cors's options of one route (its README: "route-level CORS"); null headers: those asked. */
    cors?: { allowedHeaders?: string[] | null } | false
  }
}

export interface CorsOptions {
  /**
   * `Access-Control-Allow-Credentials: true` for the listed origins, so that a page's
   * `fetch(url, { credentials: 'include' })` may send cookies or a TLS client certificate (say, to a
   * proxy that authenticates with them). Default false: a bearer token is a header the script sets,
   * which needs no credentials. Needs an `allowedOrigins` list: browsers refuse credentials with `*`.
   */
  credentials?: boolean
}

export interface McpCorsOptions extends CorsOptions {
  /** Whose Origin is allowed: the Origin check's own lists, so that both follow one. */
  policy: HostOriginPolicy
}

// How long a browser reuses a preflight's answer: Chromium caps it at 2 h and assumes 5 s without
// one. The lists change only with a restart, so 10 minutes of staleness at most, and one preflight
// per URL in 10 minutes rather than one a call. Not a setting: nothing to tune it for.
const MAX_AGE_SEC = 600

/**
 * CORS (`@fastify/cors`) for browsers on the origins the Origin check allows: the preflight is
 * answered (204) in an `onRequest` hook, registered after the Host and Origin check and before
 * authentication (a preflight carries no token) and rate limits. A request from an origin that is
 * not allowed gets no `Access-Control-*` header (and the check's 403). With any origin allowed the
 * answer is `*`; with a list, the request's origin. Every answer says `Vary: Origin`.
 * Static options: the plugin's per-request options (`delegator`) cost microseconds a request.
 * @example
 * await fastify.register(mcpCors, { policy: hostOriginPolicy(options, fastify.server) })
 */
const mcpCors: FastifyPluginAsync<McpCorsOptions> = async (fastify, { policy, credentials = false }) => {
  // Before listen, only a given list is known: the loopback default may yet turn out to be any origin.
  if (credentials && policy.origins() === undefined) throw new ConfigurationError('cors.credentials (MCP_CORS_CREDENTIALS) needs allowedOrigins (MCP_ALLOWED_ORIGINS) to list the origins')
  // SEP-2243's tool parameters in `Mcp-Param-{name}` headers have open-ended names: /mcp allows
  // whatever its preflight asks (the Origin check, not a header list, is what guards it).
  fastify.addHook('onRoute', (route) => {
    if (route.config?.mcpJsonRpc === true) route.config = { ...route.config, cors: { allowedHeaders: null } }
  })
  await fastify.register(cors, {
    hook: 'onRequest',
    origin: (origin, done) => {
      if (origin === undefined) return done(null, false)
      const allowed = policy.origins()
      if (allowed === undefined) return done(null, '*')
      // Reflected as sent (browsers compare it byte for byte); the list is compared without case, as the check does.
      done(null, allowed.has(origin.toLowerCase()))
    },
    // GET, HEAD and POST need no preflight; DELETE /webhooks/{id} does.
    methods: 'GET, HEAD, POST, DELETE',
    allowedHeaders: [...CORS_REQUEST_HEADERS],
    exposedHeaders: [...CORS_RESPONSE_HEADERS],
    maxAge: MAX_AGE_SEC,
    credentials,
    // An OPTIONS from an allowed origin without Access-Control-Request-Method is answered as a
    // preflight too, rather than the plugin's 400 in plain text.
    strictPreflight: false
  })
}

export default fp(mcpCors, { name: 'mcp-cors', fastify: '5.x' })
