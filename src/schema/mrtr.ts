import { Type, type Static } from '@sinclair/typebox'
import { JsonObject, MetaSchema } from './common.js'

/** A server-to-client request carried inside an `input_required` result (SEP-2322). */
export const InputRequestSchema = Type.Object(
  {
    method: Type.Union([
      Type.Literal('elicitation/create'),
      Type.Literal('sampling/createMessage'),
      Type.Literal('roots/list')
    ]),
    params: Type.Optional(JsonObject())
  },
  { $id: 'InputRequest', description: 'An elicitation, sampling or roots request the client must answer before retrying.' }
)
export type InputRequest = Static<typeof InputRequestSchema>

export const InputRequestsSchema = Type.Record(Type.String(), InputRequestSchema, {
  description: 'Server-assigned keys to the requests the client must answer.'
})
export type InputRequests = Static<typeof InputRequestsSchema>

export const InputResponsesSchema = Type.Record(Type.String(), JsonObject(), {
  description: 'The client answers, under the keys of `inputRequests`.'
})
export type InputResponses = Static<typeof InputResponsesSchema>

/** The fields a retried request (tools/call, prompts/get, resources/read) may carry. */
export const retryFields = {
  inputResponses: Type.Optional(InputResponsesSchema),
  requestState: Type.Optional(Type.String({ description: 'Echoed verbatim from the previous `input_required` result.' }))
}

export const InputRequiredResultSchema = Type.Object(
  {
    resultType: Type.Literal('input_required'),
    inputRequests: Type.Optional(InputRequestsSchema),
    requestState: Type.Optional(Type.String({ description: 'Opaque; echo it on the retry.' })),
    _meta: Type.Optional(MetaSchema)
  },
  { $id: 'InputRequiredResult', description: 'The server needs input before it can answer: retry with `inputResponses` and `requestState`.' }
)
export type InputRequiredResult = Static<typeof InputRequiredResultSchema>
