import { Type, type Static } from '@sinclair/typebox'
import { IconSchema, MetaSchema } from './common.js'

/*
 * MCP Server Cards (SEP-2127, a draft; experimental): the wire format of the extension repository
 * (modelcontextprotocol/experimental-ext-server-card, schema.ts at 8924e08, July 2026), written
 * here field by field. Objects stay open, as there: vendor data goes in `_meta`.
 */

/** The one `$schema` a v1 card may name. */
export const SERVER_CARD_SCHEMA_URL = 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json'
export const SERVER_CARD_MEDIA_TYPE = 'application/mcp-server-card+json'
export const AI_CATALOG_MEDIA_TYPE = 'application/ai-catalog+json'
/** Reverse-DNS namespace, one slash, server name. */
const NAME_PATTERN = '^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$'
export const SERVER_CARD_NAME = new RegExp(NAME_PATTERN)

const uri = (description: string) => Type.String({ format: 'uri', description })

export const ServerCardInputSchema = Type.Object({
  description: Type.Optional(Type.String()),
  isRequired: Type.Optional(Type.Boolean()),
  isSecret: Type.Optional(Type.Boolean()),
  format: Type.Optional(Type.Union(['string', 'number', 'boolean', 'filepath'].map((f) => Type.Literal(f)))),
  default: Type.Optional(Type.String()),
  placeholder: Type.Optional(Type.String()),
  value: Type.Optional(Type.String()),
  choices: Type.Optional(Type.Array(Type.String()))
})

export const ServerCardRemoteSchema = Type.Object({
  type: Type.Union([Type.Literal('streamable-http'), Type.Literal('sse')]),
  url: Type.String({
    pattern: '^(https?://[^\\s]+|\\{[a-zA-Z_][a-zA-Z0-9_]*\\}[^\\s]*)$',
    description: 'The endpoint; `{variables}` are filled from `variables` before connecting.'
  }),
  headers: Type.Optional(Type.Array(Type.Intersect([ServerCardInputSchema, Type.Object({ name: Type.String(), variables: Type.Optional(Type.Record(Type.String(), ServerCardInputSchema)) })]))),
  variables: Type.Optional(Type.Record(Type.String(), ServerCardInputSchema)),
  supportedProtocolVersions: Type.Optional(Type.Array(Type.String()))
})
export type ServerCardRemote = Static<typeof ServerCardRemoteSchema>

export const ServerCardRepositorySchema = Type.Object({
  url: uri('Where the source can be browsed and cloned.'),
  source: Type.String({ description: 'The hosting service, e.g. "github".' }),
  subfolder: Type.Optional(Type.String()),
  id: Type.Optional(Type.String())
})

export const ServerCardSchema = Type.Object(
  {
    $schema: Type.String({ format: 'uri', pattern: `^${SERVER_CARD_SCHEMA_URL.replaceAll('.', '\\.')}$` }),
    name: Type.String({ minLength: 3, maxLength: 200, pattern: NAME_PATTERN, description: 'Reverse-DNS namespace / name.' }),
    version: Type.String({ maxLength: 255 }),
    description: Type.String({ minLength: 1, maxLength: 100 }),
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    websiteUrl: Type.Optional(uri("The server's home page or documentation.")),
    repository: Type.Optional(ServerCardRepositorySchema),
    icons: Type.Optional(Type.Array(IconSchema)),
    remotes: Type.Optional(Type.Array(ServerCardRemoteSchema)),
    _meta: Type.Optional(MetaSchema)
  },
  {
    $id: 'ServerCard',
    description:
      'MCP Server Card (SEP-2127, experimental draft): who this server is and where and how to connect, before connecting. Advisory: server/discover is authoritative.'
  }
)
export type ServerCard = Static<typeof ServerCardSchema>

/** The AI Catalog (Agent-Card/ai-catalog, spec 1.0) as Server Card discovery uses it. */
export const AiCatalogSchema = Type.Object(
  {
    specVersion: Type.Literal('1.0'),
    entries: Type.Array(
      Type.Object({
        identifier: Type.String({ description: 'urn:air:{publisher}:mcp:{name}' }),
        type: Type.Literal(SERVER_CARD_MEDIA_TYPE),
        url: Type.Optional(Type.String({ description: "The card's URL (when this server knows its public URL)." })),
        // Inline when no public URL is known: one of `url` and `data`, as the catalogue requires.
        data: Type.Optional(Type.Unsafe<ServerCard>(Type.Object({}, { description: 'The card itself (when this server does not know its public URL).' })))
      })
    )
  },
  { description: 'AI Catalog (experimental): the Server Cards of this host.' }
)
export type AiCatalog = Static<typeof AiCatalogSchema>
