import { readFileSync } from 'node:fs'
import { apiKeyRing, parseApiKeys, type ApiKey } from './auth/api-keys.js'
import type { OAuthOptions } from './auth/oauth.js'
import { ConfigurationError } from './errors.js'
import { isLoopbackHost, loopbackOnly, type HostOriginOptions } from './auth/origin.js'
import type { Config } from './config.js'
import type { CorsOptions } from './plugins/cors.js'
import type { ServerCardOptions } from './http/server-card.js'

/*
 * The options of the server and the plugin that the configuration gives (see loadConfig in
 * config.ts, which also checks the OAuth settings together).
 */

const OAUTH_REQUIRED = ['MCP_OAUTH_ISSUER', 'MCP_OAUTH_JWKS_URL'] as const
const OAUTH_OTHERS = [
  ...OAUTH_REQUIRED,
  'MCP_OAUTH_AUTHORIZATION_SERVERS',
  'MCP_OAUTH_ALGORITHMS',
  'MCP_OAUTH_RESOURCE_METADATA_URL',
  'MCP_OAUTH_DPOP_ALGORITHMS',
  'MCP_OAUTH_DPOP_NONCE_SECRET'
] as const

export function oauthProblems(c: Config): string[] {
  if (c.MCP_OAUTH_AUDIENCE !== undefined) {
    return OAUTH_REQUIRED.filter((k) => c[k] === undefined).map((k) => `${k} is required when MCP_OAUTH_AUDIENCE is set`)
  }
  const set = [...OAUTH_OTHERS.filter((k) => c[k] !== undefined), ...(c.MCP_OAUTH_DPOP === 'off' ? [] : ['MCP_OAUTH_DPOP'])]
  return set.length === 0 ? [] : [`MCP_OAUTH_AUDIENCE is required when ${set.join(', ')} is set (it turns OAuth on)`]
}

const list = (v: string): string[] => v.split(/[\s,]+/).filter((s) => s !== '')

/** The server's `oauth` option from `MCP_OAUTH_*`; undefined when `MCP_OAUTH_AUDIENCE` is not set. */
export function oauthFromConfig(c: Config): OAuthOptions | undefined {
  if (c.MCP_OAUTH_AUDIENCE === undefined) return undefined
  const options: OAuthOptions = {
    audience: c.MCP_OAUTH_AUDIENCE,
    issuer: list(c.MCP_OAUTH_ISSUER!),
    jwksUrl: c.MCP_OAUTH_JWKS_URL!,
    clockToleranceSec: c.MCP_OAUTH_CLOCK_TOLERANCE_SEC
  }
  if (c.MCP_OAUTH_AUTHORIZATION_SERVERS !== undefined) options.authorizationServers = list(c.MCP_OAUTH_AUTHORIZATION_SERVERS)
  if (c.MCP_OAUTH_ALGORITHMS !== undefined) options.algorithms = list(c.MCP_OAUTH_ALGORITHMS)
  if (c.MCP_OAUTH_RESOURCE_METADATA_URL !== undefined) options.resourceMetadataUrl = c.MCP_OAUTH_RESOURCE_METADATA_URL
  if (c.MCP_OAUTH_DPOP !== 'off') {
    options.dpop = { required: c.MCP_OAUTH_DPOP === 'required', iatWindowSec: c.MCP_OAUTH_DPOP_IAT_WINDOW_SEC }
    if (c.MCP_OAUTH_DPOP_ALGORITHMS !== undefined) options.dpop.algorithms = list(c.MCP_OAUTH_DPOP_ALGORITHMS)
    if (c.MCP_OAUTH_DPOP_NONCE_SECRET !== undefined) {
      options.dpop.nonce = { secret: c.MCP_OAUTH_DPOP_NONCE_SECRET, windowSec: c.MCP_OAUTH_DPOP_NONCE_WINDOW_SEC }
    }
  }
  return options
}

/**
 * The server's `apiKeys` from `MCP_API_KEYS` and the file `MCP_API_KEYS_FILE`, plus `more` (the
 * gateway's `--api-key`), checked together (a {@link ConfigurationError} names a principal, never a
 * key); undefined when there are none.
 */
export function apiKeysFromConfig(c: Config, more: readonly ApiKey[] = []): ApiKey[] | undefined {
  const keys = [...(c.MCP_API_KEYS === undefined ? [] : parseApiKeys(c.MCP_API_KEYS, 'MCP_API_KEYS'))]
  if (c.MCP_API_KEYS_FILE !== undefined) {
    let text: string
    try {
      text = readFileSync(c.MCP_API_KEYS_FILE, 'utf8')
    } catch (err) {
      throw new ConfigurationError(`MCP_API_KEYS_FILE cannot be read: ${(err as Error).message}`)
    }
    keys.push(...parseApiKeys(text, 'MCP_API_KEYS_FILE'))
  }
  keys.push(...more)
  if (keys.length === 0) return undefined
  apiKeyRing(keys)
  return keys
}

export function apiKeyProblems(c: Config): string[] {
  try {
    apiKeysFromConfig(c)
    return []
  } catch (err) {
    return [(err as Error).message]
  }
}

/**
 * Host and Origin allow-lists against DNS rebinding: `MCP_ALLOWED_HOSTS` / `MCP_ALLOWED_ORIGINS`
 * (`*`: any), else, when HOST is a loopback address, the loopback names on PORT.
 */
export function hostOriginFromConfig(c: Config): HostOriginOptions {
  const defaults: HostOriginOptions = isLoopbackHost(c.HOST) ? loopbackOnly(c.PORT) : {}
  const pick = (v: string | undefined, fallback: readonly string[] | undefined) =>
    v === undefined ? fallback : v.trim() === '*' ? undefined : list(v)
  const out: HostOriginOptions = {}
  const hosts = pick(c.MCP_ALLOWED_HOSTS, defaults.allowedHosts)
  const origins = pick(c.MCP_ALLOWED_ORIGINS, defaults.allowedOrigins)
  if (hosts !== undefined) out.allowedHosts = hosts
  // `*` is any Host, even on loopback: not buildServer's loopback default.
  else if (c.MCP_ALLOWED_HOSTS !== undefined) out.loopbackByDefault = false
  if (origins !== undefined) out.allowedOrigins = origins
  return out
}

/** The plugin's `cors` from `MCP_CORS_CREDENTIALS`. */
export function corsFromConfig(c: Config): CorsOptions {
  return { credentials: c.MCP_CORS_CREDENTIALS === 'true' }
}

// With any origin the answer is `*`, which browsers refuse with credentials: say so at start.
export function corsProblems(c: Config): string[] {
  if (c.MCP_CORS_CREDENTIALS !== 'true' || hostOriginFromConfig(c).allowedOrigins !== undefined) return []
  return ['MCP_CORS_CREDENTIALS=true needs MCP_ALLOWED_ORIGINS to list the origins (browsers refuse credentials from a server that allows any origin)']
}

/** Fastify's `trustProxy` from `MCP_TRUST_PROXY`: `true` (any), or a list of addresses/CIDRs. */
export function trustProxyFromConfig(c: Config): boolean | string[] {
  const v = c.MCP_TRUST_PROXY?.trim()
  if (v === undefined || v === 'false') return false
  return v === 'true' ? true : list(v)
}

/**
 * Fastify's `logger` from `LOG_LEVEL`. `silent` is no logger at all rather than a silent pino one:
 * Fastify then creates no child logger per request.
 */
export function loggerFromConfig(c: Config): false | { level: string } {
  return c.LOG_LEVEL === 'silent' ? false : { level: c.LOG_LEVEL }
}

/** The plugin's `serverCard` from `MCP_SERVER_CARD` and `MCP_PUBLIC_URL` (off unless asked). */
export function serverCardFromConfig(c: Config): ServerCardOptions | false {
  if (c.MCP_SERVER_CARD !== 'true') return false
  return c.MCP_PUBLIC_URL === undefined ? {} : { publicUrl: c.MCP_PUBLIC_URL }
}
