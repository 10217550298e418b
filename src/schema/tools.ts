import { Type, type Static } from '@sinclair/typebox'
import { IconSchema, JsonObject, MetaSchema, paginatedFields, resultFields } from './common.js'
import { ContentBlockSchema } from './content.js'
import { InputRequiredResultSchema, retryFields } from './mrtr.js'

export const ToolAnnotationsSchema = Type.Object({
  title: Type.Optional(Type.String()),
  readOnlyHint: Type.Optional(Type.Boolean()),
  destructiveHint: Type.Optional(Type.Boolean()),
  idempotentHint: Type.Optional(Type.Boolean()),
  openWorldHint: Type.Optional(Type.Boolean())
})
export type ToolAnnotations = Static<typeof ToolAnnotationsSchema>

export const ToolSchema = Type.Object(
  {
    name: Type.String(),
    title: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    inputSchema: JsonObject('JSON Schema of the arguments (an object schema).'),
    outputSchema: Type.Optional(JsonObject('JSON Schema of `structuredContent`.')),
    annotations: Type.Optional(ToolAnnotationsSchema),
    execution: Type.Optional(
      Type.Object({
        taskSupport: Type.Optional(
          Type.Union([Type.Literal('forbidden'), Type.Literal('optional'), Type.Literal('required')])
        )
      })
    ),
    icons: Type.Optional(Type.Array(IconSchema)),
    _meta: Type.Optional(MetaSchema)
  },
  { $id: 'Tool', description: 'A tool the client can call.' }
)
export type Tool = Static<typeof ToolSchema>

export const ListToolsResultSchema = Type.Object(
  { tools: Type.Array(ToolSchema), ...paginatedFields },
  { $id: 'ListToolsResult', description: 'One page of tools.' }
)

/** `POST /tools/{name}/calls`: the `tools/call` params without `name`. */
export const CallToolBodySchema = Type.Object(
  {
    arguments: Type.Optional(JsonObject('The tool arguments, checked against its `inputSchema`.')),
    _meta: Type.Optional(MetaSchema),
    ...retryFields,
    task: Type.Optional(
      Type.Object(
        {
          ttl: Type.Optional(Type.Integer({ minimum: 1000, description: 'Keep the task at most this long (ms).' })),
          notify: Type.Optional(Type.Boolean({ description: 'Queue notifications/tasks on /notifications at each status change.' }))
        },
        { description: 'Task options, used when the server runs the call as a task.' }
      )
    )
  },
  { description: 'tools/call params; `name` comes from the path (ignored here when present).' }
)
export type CallToolBody = Static<typeof CallToolBodySchema>

export const CallToolResultSchema = Type.Object(
  {
    content: Type.Array(ContentBlockSchema),
    structuredContent: Type.Optional(JsonObject('Output matching the tool `outputSchema`.')),
    isError: Type.Optional(Type.Boolean({ description: 'True when the tool itself failed.' })),
    ...resultFields
  },
  { $id: 'CallToolResult', description: 'The result of a tool call.' }
)
export type CallToolResult = Static<typeof CallToolResultSchema>

export const CallToolResponseSchema = Type.Union([CallToolResultSchema, InputRequiredResultSchema], {
  description: 'The tool result (`isError: true` when the tool failed), or input_required (2026-07-28).'
})
export type CallToolResponse = Static<typeof CallToolResponseSchema>
