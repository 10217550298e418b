import { Type, type Static } from '@sinclair/typebox'
import { MetaSchema, resultFields } from './common.js'

export const CompleteBodySchema = Type.Object({
  ref: Type.Union([
    Type.Object({ type: Type.Literal('ref/prompt'), name: Type.String() }),
    Type.Object({ type: Type.Literal('ref/resource'), uri: Type.String() })
  ]),
  argument: Type.Object({ name: Type.String(), value: Type.String({ maxLength: 4096 }) }),
  context: Type.Optional(Type.Object({ arguments: Type.Optional(Type.Record(Type.String(), Type.String())) })),
  _meta: Type.Optional(MetaSchema)
})
export type CompleteBody = Static<typeof CompleteBodySchema>

export const CompleteResultSchema = Type.Object({
  completion: Type.Object({
    values: Type.Array(Type.String(), { maxItems: 100 }),
    total: Type.Optional(Type.Integer({ minimum: 0 })),
    hasMore: Type.Optional(Type.Boolean())
  }),
  ...resultFields
}, { $id: 'CompleteResult', description: 'Completion suggestions (at most 100).' })
export type CompleteResult = Static<typeof CompleteResultSchema>
