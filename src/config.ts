import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { apiKeyProblems, corsProblems, oauthProblems } from './config-options.js'
import { ConfigurationError } from './errors.js'
import { SUPPORTED_VERSIONS } from './protocol.js'
import { StoreLimitsConfig } from './store/limits.js'
import { redisProblems } from './store/redis-config.js'
import { WebhookConfig } from './webhooks/config.js'

const Int = (min: number, max: number, def: number, description: string) =>
  Type.Integer({ minimum: min, maximum: max, default: def, description })
const Str = (description: string) => Type.Optional(Type.String({ minLength: 1, description }))
const HOST_PORTS = '^\\s*[^\\s,:]+:\\d{1,5}(\\s*,\\s*[^\\s,:]+:\\d{1,5})*\\s*$'

/** Environment configuration of the server, validated once at start-up. */
export const ConfigSchema = Type.Object({
  HOST: Type.String({ default: '127.0.0.1', minLength: 1, description: 'Address to listen on.' }),
  PORT: Int(0, 65535, 3000, 'Port to listen on.'),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info', description: 'Server log level.' }
  ),
  MCP_DEFAULT_PROTOCOL_VERSION: Type.Union(
    SUPPORTED_VERSIONS.map((v) => Type.Literal(v)),
    { default: SUPPORTED_VERSIONS[0], description: 'Version of requests without Mcp-Protocol-Version.' }
  ),
  MCP_PAGE_SIZE: Int(1, 10000, 100, 'Items per list page.'),
  MCP_BODY_LIMIT: Int(1024, 64 * 1024 * 1024, 1024 * 1024, 'Largest request body in bytes (413 beyond).'),
  MCP_REQUEST_TIMEOUT_MS: Int(0, 3_600_000, 30_000, 'Time a client has to send a whole request, headers and body (408 beyond; 0: none).'),
  MCP_CACHE_TTL_MS: Int(0, 86_400_000, 0, 'ttlMs of lists, reads and discover (2026-07-28).'),
  MCP_STATE_KEYS: Type.Optional(
    Type.String({
      pattern: '^[^:,]+:[A-Za-z0-9_-]{43}(,[^:,]+:[A-Za-z0-9_-]{43})*$',
      description: 'Key ring sealing requestState: kid:base64url(32 bytes)[,kid:key...], the first seals.'
    })
  ),
  MCP_STATE_TTL_MS: Int(1000, 7 * 86_400_000, 15 * 60_000, 'How long a requestState stays valid.'),
  MCP_MAX_REQUEST_MS: Int(1, 3_600_000, 30_000, 'Time a request may take before long work returns a resumable part.'),
  MCP_TASK_LEASE_MS: Int(100, 86_400_000, 60_000, 'A running task is reported failed when its instance has not renewed it for this long (it died).'),
  MCP_CACHE_SCOPE: Type.Union([Type.Literal('private'), Type.Literal('public')], {
    default: 'private',
    description: 'cacheScope of lists, reads and discover.'
  }),
  MCP_OAUTH_AUDIENCE: Str("This server's resource URI; setting it turns OAuth on (needs ISSUER and JWKS_URL)."),
  MCP_OAUTH_ISSUER: Str('Accepted token issuer(s), comma-separated.'),
  MCP_OAUTH_JWKS_URL: Str("The authorization server's JWKS URL (https)."),
  MCP_OAUTH_AUTHORIZATION_SERVERS: Str('authorization_servers of the RFC 9728 metadata, comma-separated (default: the issuers).'),
  MCP_OAUTH_ALGORITHMS: Str('Accepted JWS algorithms, comma-separated (default RS256,ES256,EdDSA,PS256).'),
  MCP_OAUTH_CLOCK_TOLERANCE_SEC: Int(0, 600, 30, 'Leeway for exp and nbf, in seconds.'),
  MCP_OAUTH_RESOURCE_METADATA_URL: Str('resource_metadata URL of the challenges (default: derived from the audience).'),
  MCP_OAUTH_DPOP: Type.Union([Type.Literal('off'), Type.Literal('allowed'), Type.Literal('required')], {
    default: 'off',
    description: 'DPoP-bound access tokens (RFC 9449): allowed beside Bearer, or required of every OAuth token.'
  }),
  MCP_OAUTH_DPOP_ALGORITHMS: Str('JWS algorithms accepted for DPoP proofs, comma-separated (default ES256,EdDSA,RS256,PS256).'),
  MCP_OAUTH_DPOP_IAT_WINDOW_SEC: Int(1, 3600, 300, "How far a DPoP proof's iat may be from the server's clock, either way, in seconds."),
  MCP_OAUTH_DPOP_NONCE_SECRET: Type.Optional(
    Type.String({ minLength: 32, description: 'Turns DPoP server nonces on: the HMAC secret (32+ characters, the same on every instance).' })
  ),
  MCP_OAUTH_DPOP_NONCE_WINDOW_SEC: Int(10, 86_400, 300, 'How long a DPoP nonce is current; the previous one is accepted one window more.'),
  MCP_API_KEYS: Str('Static API keys: principal:key or principal:key:scope1 scope2, comma-separated; keys of 32 characters or more.'),
  MCP_API_KEYS_FILE: Str('A file of API keys, one principal:key[:scopes] a line (# comments): keeps them out of the environment.'),
  MCP_ALLOWED_HOSTS: Str('Accepted Host headers, comma-separated, or * for any (default: loopback names when HOST is loopback).'),
  MCP_ALLOWED_ORIGINS: Str('Accepted Origin headers, comma-separated, or * for any (default: loopback origins when HOST is loopback). Browsers on them get CORS answers.'),
  MCP_CORS_CREDENTIALS: Type.Union([Type.Literal('true'), Type.Literal('false')], {
    default: 'false',
    description: 'CORS answers allow credentials (cookies, TLS client certificates) for MCP_ALLOWED_ORIGINS; needs a list, not *.'
  }),
  MCP_REDIS_URL: Type.Optional(
    Type.String({ pattern: '^rediss?://', description: 'Shared state in Redis (redis:// or rediss://); default: in this process only.' })
  ),
  MCP_REDIS_PREFIX: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, pattern: '^[^{}]+$', description: 'Prefix of every Redis key and channel (default mcp:; no braces).' })
  ),
  MCP_REDIS_CLUSTER_NODES: Type.Optional(
    Type.String({ pattern: HOST_PORTS, description: 'Shared state in Redis Cluster: seed nodes, host:port comma-separated (instead of MCP_REDIS_URL).' })
  ),
  MCP_REDIS_SENTINELS: Type.Optional(
    Type.String({ pattern: HOST_PORTS, description: 'Shared state in Redis under Sentinel: the Sentinels, host:port comma-separated.' })
  ),
  MCP_REDIS_SENTINEL_MASTER: Str('The name of the primary the Sentinels monitor (with MCP_REDIS_SENTINELS).'),
  MCP_REDIS_SENTINEL_PASSWORD: Str("The Sentinels' own password, when they require one."),
  MCP_REDIS_USERNAME: Str('ACL user of the Redis nodes (cluster and Sentinel forms; a URL carries its own).'),
  MCP_REDIS_PASSWORD: Str('Password of the Redis nodes (cluster and Sentinel forms; a URL carries its own).'),
  MCP_REDIS_TLS: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'TLS to the Redis nodes and Sentinels (a URL says rediss://).' })),
  MCP_REDIS_TLS_CA_FILE: Str('PEM file of the CAs trusted for TLS to Redis (turns TLS on).'),
  MCP_REDIS_WAIT_REPLICAS: Int(0, 16, 0, 'Replicas that must have a write before the client is answered (Redis WAIT); 0: none.'),
  MCP_REDIS_WAIT_TIMEOUT_MS: Int(1, 60_000, 1000, 'How long a write waits for MCP_REDIS_WAIT_REPLICAS; beyond, the request fails with 503.'),
  MCP_REDIS_COMMAND_TIMEOUT_MS: Type.Optional(
    Type.Integer({ minimum: 50, maximum: 60_000, description: 'How long a Redis command may take before the request fails fast with 503 (default 2000).' })
  ),
  MCP_REDIS_FUNCTIONS: Type.Optional(
    Type.Union([Type.Literal('auto'), Type.Literal('off')], {
      description: 'auto (default): the store runs its Lua as Redis Functions where Redis has them (7.0) and allows them, else as scripts; off: scripts always.'
    })
  ),
  MCP_IDEMPOTENCY_TTL_MS: Int(0, 86_400_000, 600_000, 'How long a tool call with an Mcp-Request-Id is replayed to retries (0: off).'),
  MCP_IDEMPOTENCY_LEASE_MS: Int(1000, 3_600_000, 30_000, 'How long a running idempotent call holds its id unrenewed: a retry after its instance died waits at most this.'),
  MCP_RATE_LIMIT_MAX: Int(0, 1_000_000, 0, 'Requests per principal (anonymous: per IP) per window; 0: no limit.'),
  MCP_RATE_LIMIT_WINDOW_MS: Int(1000, 86_400_000, 60_000, 'The rate limit window.'),
  MCP_MAX_STREAMS_PER_PRINCIPAL: Int(1, 1_000_000, 100, 'Streams (SSE answers) one client may hold open at once on this instance (429 beyond).'),
  MCP_MAX_STREAMS: Int(1, 10_000_000, 10_000, 'Streams (SSE answers) open at once on this instance, all clients (503 beyond).'),
  MCP_MAX_EVENT_LOOP_DELAY_MS: Int(0, 60_000, 0, 'Shed load (503) while the event loop lags more than this (e.g. 1000); 0: off.'),
  MCP_MAX_HEAP_USED_BYTES: Int(0, Number.MAX_SAFE_INTEGER, 0, 'Shed load (503) while the heap is larger than this; 0: off.'),
  MCP_SHUTDOWN_GRACE_MS: Int(0, 600_000, 10_000, 'On SIGTERM, how long in-flight requests may finish before the process exits (and, at a gateway\'s reload, the calls of a server removed or changed).'),
  MCP_TRUST_PROXY: Str('Trust X-Forwarded-For from: true (any), or addresses/CIDRs, comma-separated (default: none).'),
  MCP_METRICS: Type.Union([Type.Literal('true'), Type.Literal('false')], { default: 'false', description: 'Serve GET /metrics (Prometheus text format) outside the MCP routes.' }),
  MCP_METRICS_PORT: Int(0, 65535, 0, 'Serve /metrics on this port of its own instead (0: on PORT).'),
  MCP_SERVER_CARD: Type.Union([Type.Literal('true'), Type.Literal('false')], {
    default: 'false',
    description: 'Experimental: serve the MCP Server Card (SEP-2127 draft) at /mcp/server-card of each mount, and /.well-known/ai-catalog.json.'
  }),
  MCP_PUBLIC_URL: Type.Optional(
    Type.String({ pattern: '^https?://[^?#]+$', description: "Where clients reach this server's root (behind any proxy), e.g. https://mcp.example.com: the Server Card's URLs." })
  ),
  MCP_DOCS: Type.Union([Type.Literal('true'), Type.Literal('false')], { default: 'true', description: 'Serve the interactive API reference at /docs and the console at /console.' }),
  ...StoreLimitsConfig,
  ...WebhookConfig
})
export type Config = Static<typeof ConfigSchema>

/**
 * Read the configuration from the environment. Numbers are converted; anything unknown-valued or out
 * of range stops the start with a message naming the variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, unknown> = {}
  for (const [key, schema] of Object.entries(ConfigSchema.properties)) {
    const v = env[key]
    if (v === undefined || v === '') continue
    raw[key] = schema.type === 'integer' && /^-?\d+$/.test(v.trim()) ? Number(v) : v
  }
  const config = Value.Default(ConfigSchema, raw) as Config
  const problems = [...Value.Errors(ConfigSchema, config)].map(
    (e) => `${e.path.slice(1)}=${JSON.stringify(e.value)}: ${e.message}`
  )
  problems.push(...oauthProblems(config))
  problems.push(...apiKeyProblems(config))
  problems.push(...corsProblems(config))
  problems.push(...redisProblems(config))
  if (problems.length > 0) throw new ConfigurationError(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  return config
}

export { apiKeysFromConfig, corsFromConfig, serverCardFromConfig, hostOriginFromConfig, loggerFromConfig, oauthFromConfig, trustProxyFromConfig } from './config-options.js'
