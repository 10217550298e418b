import { Type, type Static } from '@sinclair/typebox'
import { IconSchema, MetaSchema, paginatedFields, resultFields } from './common.js'
import { ContentBlockSchema } from './content.js'
import { InputRequiredResultSchema, retryFields } from './mrtr.js'

export const PromptArgumentSchema = Type.Object({
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  required: Type.Optional(Type.Boolean())
})
export type PromptArgument = Static<typeof PromptArgumentSchema>

export const PromptSchema = Type.Object({
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  arguments: Type.Optional(Type.Array(PromptArgumentSchema)),
  icons: Type.Optional(Type.Array(IconSchema)),
  _meta: Type.Optional(MetaSchema)
}, { $id: 'Prompt' })
export type Prompt = Static<typeof PromptSchema>

export const ListPromptsResultSchema = Type.Object(
  { prompts: Type.Array(PromptSchema), ...paginatedFields },
  { $id: 'ListPromptsResult', description: 'One page of prompts.' }
)

export const PromptArgumentsSchema = Type.Record(Type.String(), Type.String(), {
  description: 'Prompt arguments: names to string values.'
})

/** `POST /prompts/{name}`: the fallback for arguments too large for a header. */
export const GetPromptBodySchema = Type.Object({
  arguments: Type.Optional(PromptArgumentsSchema),
  _meta: Type.Optional(MetaSchema),
  ...retryFields
})
export type GetPromptBody = Static<typeof GetPromptBodySchema>

export const PromptMessageSchema = Type.Object({
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
  content: ContentBlockSchema
}, { $id: 'PromptMessage' })
export type PromptMessage = Static<typeof PromptMessageSchema>

export const GetPromptResultSchema = Type.Object({
  description: Type.Optional(Type.String()),
  messages: Type.Array(PromptMessageSchema),
  ...resultFields
}, { $id: 'GetPromptResult' })
export type GetPromptResult = Static<typeof GetPromptResultSchema>

export const GetPromptResponseSchema = Type.Union([GetPromptResultSchema, InputRequiredResultSchema], {
  description: 'The prompt messages, or input_required (2026-07-28).'
})
export type GetPromptResponse = Static<typeof GetPromptResponseSchema>
