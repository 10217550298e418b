import { Type, type Static } from '@sinclair/typebox'
import { AnnotationsSchema, IconSchema, MetaSchema, cacheableFields, paginatedFields } from './common.js'
import { ResourceContentsSchema } from './content.js'
import { InputRequiredResultSchema, retryFields } from './mrtr.js'

export const ResourceSchema = Type.Object({
  uri: Type.String(),
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  size: Type.Optional(Type.Integer({ minimum: 0 })),
  annotations: Type.Optional(AnnotationsSchema),
  icons: Type.Optional(Type.Array(IconSchema)),
  _meta: Type.Optional(MetaSchema)
}, { $id: 'Resource' })
export type Resource = Static<typeof ResourceSchema>

export const ResourceTemplateSchema = Type.Object({
  uriTemplate: Type.String({ description: 'An RFC 6570 URI template.' }),
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  annotations: Type.Optional(AnnotationsSchema),
  icons: Type.Optional(Type.Array(IconSchema)),
  _meta: Type.Optional(MetaSchema)
}, { $id: 'ResourceTemplate' })
export type ResourceTemplate = Static<typeof ResourceTemplateSchema>

export const ListResourcesResultSchema = Type.Object(
  { resources: Type.Array(ResourceSchema), ...paginatedFields },
  { $id: 'ListResourcesResult', description: 'One page of resources.' }
)
export const ListResourceTemplatesResultSchema = Type.Object(
  { resourceTemplates: Type.Array(ResourceTemplateSchema), ...paginatedFields },
  { $id: 'ListResourceTemplatesResult', description: 'One page of resource templates.' }
)

export const ReadResourceResultSchema = Type.Object({
  contents: Type.Array(ResourceContentsSchema),
  ...cacheableFields
}, { $id: 'ReadResourceResult' })
export type ReadResourceResult = Static<typeof ReadResourceResultSchema>
export const ReadResourceResponseSchema = Type.Union([ReadResourceResultSchema, InputRequiredResultSchema], {
  description: 'The resource contents, or input_required (2026-07-28).'
})

/** `POST /resources/{uri}`: the fallback for parameters too large for headers. */
export const ReadResourceBodySchema = Type.Object({ _meta: Type.Optional(MetaSchema), ...retryFields })
export type ReadResourceBody = Static<typeof ReadResourceBodySchema>

export const SubscribeBodySchema = Type.Object({
  uri: Type.String({ minLength: 1, maxLength: 4096 }),
  _meta: Type.Optional(MetaSchema)
})
export type SubscribeBody = Static<typeof SubscribeBodySchema>
export type ReadResourceResponse = Static<typeof ReadResourceResponseSchema>
