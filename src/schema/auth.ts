import { Type, type Static } from '@sinclair/typebox'

/** OAuth 2.0 Protected Resource Metadata (RFC 9728), the fields this server publishes. */
export const ProtectedResourceMetadataSchema = Type.Object(
  {
    resource: Type.String({ description: "This server's resource identifier: the `aud` its tokens must carry." }),
    authorization_servers: Type.Array(Type.String(), { description: 'Issuers whose tokens this server accepts (RFC 8414 discovery).' }),
    scopes_supported: Type.Array(Type.String(), { description: 'Scopes this server checks.' }),
    bearer_methods_supported: Type.Array(Type.Literal('header'), { description: 'Only the Authorization header.' })
  },
  { description: 'OAuth 2.0 Protected Resource Metadata (RFC 9728).' }
)
export type ProtectedResourceMetadata = Static<typeof ProtectedResourceMetadataSchema>
