import { isIP } from 'node:net'
import type { McpServer } from '../core/mcp-server.js'
import { createValidator, describeErrors } from '../core/validation.js'
import { ConfigurationError } from '../errors.js'
import { SUPPORTED_VERSIONS } from '../protocol.js'
import type { Implementation, Meta } from '../schema/common.js'
import {
  SERVER_CARD_MEDIA_TYPE,
  SERVER_CARD_NAME,
  SERVER_CARD_SCHEMA_URL,
  ServerCardSchema,
  type AiCatalog,
  type ServerCard,
  type ServerCardRemote
} from '../schema/server-card.js'

/**
 * The plugin's `serverCard` option (experimental, SEP-2127 draft): fields that override what the
 * catalogue's `serverInfo` gives, and where clients reach this server.
 */
export interface ServerCardOptions {
  /** Reverse-DNS `namespace/name` (default: serverInfo.name when it has that form, else derived: docs/server-card.md). */
  name?: string
  title?: string
  /** 1-100 characters (default: serverInfo's description, else its title, else its name). */
  description?: string
  websiteUrl?: string
  repository?: ServerCard['repository']
  icons?: Implementation['icons']
  _meta?: Meta
  /**
   * Where clients reach this server's root, as they see it (scheme, host, port, and any path a proxy
   * puts before it), e.g. `https://mcp.example.com`. The card's endpoint URLs are absolute under it.
   * Without it they read `{origin}/...`, a variable the client fills: the request's Host is not
   * trusted, since a shared cache would keep a card an attacker's Host header shaped.
   */
  publicUrl?: string
}

/** Where a mount serves: its prefix, and its Streamable HTTP endpoint (none: `jsonRpc: false`). */
export interface CardSite {
  prefix: string
  jsonRpcPath: string | undefined
  /** Static API keys are the only way in: the card says to send one (OAuth clients learn from the 401). */
  apiKeyRequired?: boolean
}

// The card schema's way to ask the user for a secret header: a template, its variable secret.
const API_KEY_HEADER = {
  name: 'Authorization',
  description: 'An API key of this server, as a bearer token.',
  isRequired: true,
  isSecret: true,
  value: 'Bearer {api_key}',
  variables: { api_key: { description: 'Your API key for this server.', isRequired: true, isSecret: true } }
}

/** Our own `_meta` key: the Pure HTTP face is no transport type the card schema knows. */
export const PURE_HTTP_META = 'mcp-pure-http/pure-http'

let validate: ReturnType<ReturnType<typeof createValidator>['compile']> | undefined

const fit = (s: string): string => (s.length <= 100 ? s : `${s.slice(0, 99)}…`)
const slug = (s: string): string => s.replace(/[^a-zA-Z0-9._-]+/g, '-').slice(0, 100)

/** A namespace for a name that has none: the public host reversed (`com.example.mcp`), else `local`. */
function namespaceOf(publicUrl: URL | undefined): string {
  const host = publicUrl?.hostname
  return host === undefined || !host.includes('.') || isIP(host) !== 0 ? 'local' : host.split('.').reverse().join('.')
}

/**
 * The Server Card of `mcp` as served at `site`: built once (a catalogue's identity does not change
 * while it serves) and checked against the card schema, so a bad option stops the start, not a client.
 */
export function buildServerCard(mcp: McpServer, options: ServerCardOptions, site: CardSite): ServerCard {
  const info = mcp.serverInfo
  const base = publicBase(options.publicUrl)
  const name = options.name ?? (SERVER_CARD_NAME.test(info.name) ? info.name : `${namespaceOf(base)}/${slug(info.name)}`)
  const root = base === undefined ? '{origin}' : base.href.replace(/\/$/, '')
  const versions = [...SUPPORTED_VERSIONS]
  const remotes: ServerCardRemote[] = []
  if (site.jsonRpcPath !== undefined) {
    remotes.push({
      type: 'streamable-http',
      url: `${root}${site.prefix}${site.jsonRpcPath}`,
      ...(base === undefined ? { variables: { origin: { description: 'Scheme, host and port this server is reached at, e.g. https://mcp.example.com', isRequired: true } } } : {}),
      ...(site.apiKeyRequired === true ? { headers: [API_KEY_HEADER] } : {}),
      supportedProtocolVersions: versions
    })
  }
  const title = options.title ?? info.title
  const card: ServerCard = {
    $schema: SERVER_CARD_SCHEMA_URL,
    name,
    version: info.version,
    description: options.description ?? fit(info.description ?? info.title ?? info.name),
    ...(title === undefined ? {} : { title: options.title ?? fit(title) }),
    ...(options.websiteUrl === undefined ? {} : { websiteUrl: options.websiteUrl }),
    ...(options.repository === undefined ? {} : { repository: options.repository }),
    ...(options.icons === undefined ? {} : { icons: options.icons }),
    remotes,
    _meta: {
      ...options._meta,
      // The REST face (SEP-1612) beside the standard remotes, under our own key.
      [PURE_HTTP_META]: { url: `${root}${site.prefix}`, openapi: `${root}${site.prefix}/openapi.json`, supportedProtocolVersions: versions }
    }
  }
  validate ??= createValidator().compile(ServerCardSchema)
  if (!validate(card)) throw new ConfigurationError(`serverCard: ${describeErrors(validate.errors).message}`)
  return card
}

function publicBase(url: string | undefined): URL | undefined {
  if (url === undefined) return undefined
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  if (parsed === undefined || !/^https?:$/.test(parsed.protocol) || parsed.search !== '' || parsed.hash !== '') {
    throw new ConfigurationError(`serverCard.publicUrl (MCP_PUBLIC_URL): ${JSON.stringify(url)} is not an http(s) URL without query or fragment`)
  }
  return parsed
}

/** A card the host lists in its AI Catalog: the card, and the path it is served at. */
export interface CatalogedCard {
  card: ServerCard
  path: string
  prefix: string
  publicUrl: string | undefined
}

/**
 * The AI Catalog of the cards: each entry links the card when its public URL is known, else carries
 * it inline (`data`). Identifiers follow `urn:air:{publisher}:mcp:{name}`: the mount's path names
 * it, since two mounts of one upstream share a card name.
 */
export function aiCatalog(cards: readonly CatalogedCard[]): AiCatalog {
  return {
    specVersion: '1.0',
    entries: cards.map(({ card, path, prefix, publicUrl }) => {
      const base = publicUrl === undefined ? undefined : new URL(publicUrl)
      const [namespace, own] = card.name.split('/') as [string, string]
      const publisher = base?.hostname ?? namespace.split('.').reverse().join('.')
      const id = prefix === '' ? own : slug(prefix.slice(1).replaceAll('/', '.'))
      return {
        identifier: `urn:air:${publisher}:mcp:${id}`,
        type: SERVER_CARD_MEDIA_TYPE,
        ...(base === undefined ? { data: card } : { url: `${base.href.replace(/\/$/, '')}${path}` })
      }
    })
  }
}
