import { Type, type Static } from '@sinclair/typebox'

/** `_meta`: free-form metadata. Keys under `io.modelcontextprotocol/` are reserved by MCP. */
export const MetaSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Free-form request or result metadata (`_meta`).'
})
export type Meta = Static<typeof MetaSchema>

/** A JSON object whose shape the schema does not constrain. */
export const JsonObject = (description?: string) =>
  Type.Record(Type.String(), Type.Unknown(), description === undefined ? {} : { description })

export const ResultType = { complete: 'complete', inputRequired: 'input_required', task: 'task' } as const
export const ResultTypeSchema = Type.Union(
  [Type.Literal('complete'), Type.Literal('input_required'), Type.Literal('task')],
  { description: 'How to read the result (2026-07-28 and later; absent means "complete").' }
)

export const CacheScopeSchema = Type.Union([Type.Literal('public'), Type.Literal('private')])
export type CacheScope = Static<typeof CacheScopeSchema>

/** The fields every result may carry. */
export const resultFields = {
  _meta: Type.Optional(MetaSchema),
  resultType: Type.Optional(ResultTypeSchema)
}

/** The fields of a cacheable result (lists, reads, discover) in 2026-07-28. */
export const cacheableFields = {
  ...resultFields,
  ttlMs: Type.Optional(Type.Integer({ minimum: 0, description: 'How long the client may consider the result fresh.' })),
  cacheScope: Type.Optional(CacheScopeSchema)
}

export const paginatedFields = {
  ...cacheableFields,
  nextCursor: Type.Optional(Type.String({ description: 'Pass as `?cursor=` to get the next page.' }))
}

export const IconSchema = Type.Object({
  src: Type.String(),
  mimeType: Type.Optional(Type.String()),
  sizes: Type.Optional(Type.Array(Type.String())),
  theme: Type.Optional(Type.Union([Type.Literal('light'), Type.Literal('dark')]))
})

export const ImplementationSchema = Type.Object(
  {
    name: Type.String(),
    version: Type.String(),
    title: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    websiteUrl: Type.Optional(Type.String()),
    icons: Type.Optional(Type.Array(IconSchema))
  },
  { description: 'Name and version of an MCP implementation.' }
)
export type Implementation = Static<typeof ImplementationSchema>

/** The body of every error response: the JSON-RPC `error` object. */
export const ErrorSchema = Type.Object(
  {
    code: Type.Integer({ description: 'JSON-RPC error code.' }),
    message: Type.String(),
    data: Type.Optional(Type.Unknown())
  },
  { $id: 'McpError', description: 'The JSON-RPC error object.' }
)
export type ErrorBody = Static<typeof ErrorSchema>

export const AnnotationsSchema = Type.Object({
  audience: Type.Optional(Type.Array(Type.Union([Type.Literal('user'), Type.Literal('assistant')]))),
  priority: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  lastModified: Type.Optional(Type.String())
})
