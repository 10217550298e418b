import { Type, type Static } from '@sinclair/typebox'

/** OAuth 2.0 Protected Resource Metadata (RFC 9728), the fields this server publishes. */
export const ProtectedResourceMetadataSchema = Type.Object(
  {
    resource: Type.String({ description: "This server's resource identifier: the `aud` its tokens must carry." }),
    authorization_servers: Type.Array(Type.String(), { description: 'Issuers whose tokens this server accepts (RFC 8414 discovery).' }),
    scopes_supported: Type.Array(Type.String(), { description: 'Scopes this server checks.' }),
    bearer_methods_supported: Type.Array(Type.Literal('header'), { description: 'Only the Authorization header.' }),
    dpop_signing_alg_values_supported: Type.Optional(
      Type.Array(Type.String(), { description: 'With DPoP on: the JWS algorithms accepted for DPoP proofs (RFC 9728, RFC 9449).' })
    ),
    dpop_bound_access_tokens_required: Type.Optional(Type.Boolean({ description: 'True when every access token must be DPoP-bound (RFC 9728).' }))
  },
  { description: 'OAuth 2.0 Protected Resource Metadata (RFC 9728).' }
)
export type ProtectedResourceMetadata = Static<typeof ProtectedResourceMetadataSchema>
