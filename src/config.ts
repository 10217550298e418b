import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ConfigurationError } from './errors.js'
import { SUPPORTED_VERSIONS } from './protocol.js'

const Int = (min: number, max: number, def: number, description: string) =>
  Type.Integer({ minimum: min, maximum: max, default: def, description })

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
  MCP_CACHE_TTL_MS: Int(0, 86_400_000, 0, 'ttlMs of lists, reads and discover (2026-07-28).'),
  MCP_CACHE_SCOPE: Type.Union([Type.Literal('private'), Type.Literal('public')], {
    default: 'private',
    description: 'cacheScope of lists, reads and discover.'
  })
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
  if (problems.length > 0) throw new ConfigurationError(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  return config
}
