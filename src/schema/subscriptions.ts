import { Type } from '@sinclair/typebox'
import { MetaSchema } from './common.js'

/** `subscriptions/listen` (2026-07-28): the notifications the client wants on the stream. */
export const ListenParamsSchema = Type.Object({
  notifications: Type.Object({
    toolsListChanged: Type.Optional(Type.Boolean()),
    promptsListChanged: Type.Optional(Type.Boolean()),
    resourcesListChanged: Type.Optional(Type.Boolean()),
    resourceSubscriptions: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 1000 }))
  }),
  _meta: Type.Optional(MetaSchema)
})
