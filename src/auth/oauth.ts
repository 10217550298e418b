import { OFFLINE_ACCESS } from '../core/definition-checks.js'
import { ConfigurationError } from '../errors.js'
import { isLoopbackHost } from './origin.js'
import type { OnceKeys } from '../store/types.js'
import { apiKeyRing, type ApiKey, type KeyLookup } from './api-keys.js'
import { apiKeyAuth, bearerAuth, type Authenticate, type BearerAuthOptions } from './bearer.js'
import { DEFAULT_DPOP_ALGORITHMS } from './dpop.js'

/**
 * `mcpPlugin`'s OAuth 2.1 resource-server mode: {@link bearerAuth} on every route, plus the RFC 9728
 * metadata document at `/.well-known/oauth-protected-resource` (under the plugin's prefix).
 */
export interface OAuthOptions extends BearerAuthOptions {
  /** RFC 9728 `authorization_servers`: where clients get tokens (default: the issuers). */
  authorizationServers?: readonly string[]
  /** RFC 9728 `scopes_supported` (default: the scopes the registered tools require, kept current). */
  scopesSupported?: readonly string[]
}

export interface OAuthSetup {
  authenticate: Authenticate
  /** The `resource_metadata` URL every challenge names. */
  metadataUrl: string
  /** What the metadata route publishes. */
  metadata: {
    resource: string
    authorizationServers: readonly string[]
    scopesSupported: readonly string[] | undefined
    dpop: { algorithms: readonly string[]; required: boolean } | undefined
  }
  /**
   * RFC 9728 section 3.1's metadata path for an audience with a path (`https://h/mcp` gives
   * `/.well-known/oauth-protected-resource/mcp`), where clients that build the URL themselves look.
   */
  insertedPath: string | undefined
}

export const WELL_KNOWN_PATH = '/.well-known/oauth-protected-resource'

/**
 * Check the OAuth options and derive the rest. The audience must be the server's resource URI (an
 * absolute http(s) URL without fragment, RFC 8707); the metadata URL defaults to that URL's origin
 * plus the plugin's prefix plus {@link WELL_KNOWN_PATH}, where the plugin serves it. Behind a proxy
 * that rewrites paths, set `resourceMetadataUrl`. With `keys`, a bearer that is an API key is its
 * principal before any JWT is looked at. With DPoP on, `onceKeys` remembers proof ids (unless
 * `dpop.replay` names its own).
 */
export function oauthSetup(options: OAuthOptions, prefix: string, keys?: KeyLookup, onceKeys?: OnceKeys): OAuthSetup {
  let resource: URL
  try {
    resource = new URL(options.audience)
  } catch {
    throw new ConfigurationError(`oauth: audience must be this server's resource URI (an absolute URL), not "${options.audience}"`)
  }
  if ((resource.protocol !== 'https:' && resource.protocol !== 'http:') || resource.hash !== '') {
    throw new ConfigurationError(`oauth: audience must be an http(s) URL without fragment, not "${options.audience}"`)
  }
  const metadataUrl = options.resourceMetadataUrl ?? `${resource.origin}${prefix}${WELL_KNOWN_PATH}`
  const metadata = protectedResourceMetadata(options)
  return {
    authenticate: bearerAuth(
      {
        ...options,
        resourceMetadataUrl: metadataUrl,
        ...(options.dpop === undefined ? {} : { dpop: { ...options.dpop, replay: options.dpop.replay ?? onceKeys } })
      },
      keys
    ),
    metadataUrl: new URL(metadataUrl).href,
    metadata,
    insertedPath: insertedPathOf(resource)
  }
}

/** What the RFC 9728 metadata route publishes: `authorization_servers` defaults to the issuers. */
export function protectedResourceMetadata(options: OAuthOptions): OAuthSetup['metadata'] {
  const issuers = typeof options.issuer === 'string' ? [options.issuer] : [...options.issuer]
  const authorizationServers = [...(options.authorizationServers ?? issuers)]
  if (authorizationServers.length === 0) throw new ConfigurationError('oauth: authorizationServers must not be empty')
  for (const server of authorizationServers) checkIssuerIdentifier(server, options.authorizationServers === undefined ? 'issuer' : 'authorizationServers')
  if (options.scopesSupported?.includes(OFFLINE_ACCESS) === true) {
    throw new ConfigurationError(`oauth: scopesSupported must not list ${OFFLINE_ACCESS} (MCP 2026-07-28: refresh tokens are not a resource's requirement)`)
  }
  const dpop = options.dpop === undefined ? undefined : { algorithms: options.dpop.algorithms ?? DEFAULT_DPOP_ALGORITHMS, required: options.dpop.required === true }
  return { resource: options.audience, authorizationServers, scopesSupported: options.scopesSupported, dpop }
}

/**
 * An entry of `authorization_servers` is an issuer identifier (RFC 8414 section 2): an https URL
 * without query or fragment (http on a loopback host, for development). Clients build the
 * metadata URL from it and, as MCP 2026-07-28 and SEP-2468 require, compare the `issuer` of the
 * metadata and the `iss` of the authorization response with it exactly: anything else fails them
 * later, far from its cause.
 */
function checkIssuerIdentifier(value: string, name: string): void {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    url = undefined
  }
  const scheme = url?.protocol === 'https:' || (url?.protocol === 'http:' && isLoopbackHost(url.hostname))
  if (url === undefined || !scheme || url.search !== '' || url.hash !== '' || value.includes('?') || value.includes('#')) {
    throw new ConfigurationError(
      `oauth: ${name} "${value}" is not an authorization server's issuer identifier (an https URL without query or fragment; http only on a loopback host)`
    )
  }
}

/** The path-inserted metadata path of an audience with a path (trailing slash dropped), else undefined. */
export function insertedPathOf(resource: URL): string | undefined {
  const path = resource.pathname.replace(/\/+$/, '')
  return path === '' ? undefined : `${WELL_KNOWN_PATH}${path}`
}

/** Who may call, as `mcpPlugin` and the gateway's root listing take it. */
export interface AuthOptions {
  oauth?: OAuthOptions | undefined
  apiKeys?: readonly ApiKey[] | undefined
  authenticate?: Authenticate | undefined
}

/**
 * The one `authenticate` the options make: OAuth (an API key first, when there are keys), API keys
 * alone, or the application's own function; undefined for none. `authenticate` reads the request
 * its own way, so it goes with neither of the others.
 */
export function authSetup(
  options: AuthOptions,
  prefix: string,
  onceKeys?: OnceKeys
): { oauth: OAuthSetup | undefined; authenticate: Authenticate | undefined } {
  if (options.authenticate !== undefined && (options.oauth !== undefined || options.apiKeys !== undefined)) {
    throw new ConfigurationError(`mcpPlugin: give either ${options.oauth === undefined ? 'apiKeys' : 'oauth'} or authenticate, not both`)
  }
  const keys = options.apiKeys === undefined ? undefined : apiKeyRing(options.apiKeys)
  const oauth = options.oauth === undefined ? undefined : oauthSetup(options.oauth, prefix, keys, onceKeys)
  return { oauth, authenticate: oauth?.authenticate ?? (keys === undefined ? options.authenticate : apiKeyAuth(keys)) }
}
