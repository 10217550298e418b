import { Type, type Static } from '@sinclair/typebox'
import { AnnotationsSchema, MetaSchema } from './common.js'

const base = {
  annotations: Type.Optional(AnnotationsSchema),
  _meta: Type.Optional(MetaSchema)
}

export const TextResourceContentsSchema = Type.Object({
  uri: Type.String(),
  mimeType: Type.Optional(Type.String()),
  text: Type.String(),
  _meta: Type.Optional(MetaSchema)
}, { $id: 'TextResourceContents' })
export const BlobResourceContentsSchema = Type.Object({
  uri: Type.String(),
  mimeType: Type.Optional(Type.String()),
  blob: Type.String({ description: 'Base64-encoded bytes.' }),
  _meta: Type.Optional(MetaSchema)
}, { $id: 'BlobResourceContents' })
export const ResourceContentsSchema = Type.Union([TextResourceContentsSchema, BlobResourceContentsSchema], { $id: 'ResourceContents' })
export type ResourceContents = Static<typeof ResourceContentsSchema>

export const TextContentSchema = Type.Object({ type: Type.Literal('text'), text: Type.String(), ...base }, { $id: 'TextContent' })
export const ImageContentSchema = Type.Object({
  type: Type.Literal('image'),
  data: Type.String(),
  mimeType: Type.String(),
  ...base
}, { $id: 'ImageContent' })
export const AudioContentSchema = Type.Object({
  type: Type.Literal('audio'),
  data: Type.String(),
  mimeType: Type.String(),
  ...base
}, { $id: 'AudioContent' })
export const ResourceLinkSchema = Type.Object({
  type: Type.Literal('resource_link'),
  uri: Type.String(),
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  size: Type.Optional(Type.Integer()),
  ...base
}, { $id: 'ResourceLink' })
export const EmbeddedResourceSchema = Type.Object({
  type: Type.Literal('resource'),
  resource: ResourceContentsSchema,
  ...base
}, { $id: 'EmbeddedResource' })

export const ContentBlockSchema = Type.Union(
  [TextContentSchema, ImageContentSchema, AudioContentSchema, ResourceLinkSchema, EmbeddedResourceSchema],
  { $id: 'ContentBlock', description: 'A piece of content: text, image, audio, a link to a resource, or an embedded resource.' }
)
export type ContentBlock = Static<typeof ContentBlockSchema>
