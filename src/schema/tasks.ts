import { Type, type Static } from '@sinclair/typebox'
import { ErrorSchema, JsonObject, MetaSchema } from './common.js'
import { InputRequestsSchema, InputResponsesSchema } from './mrtr.js'

const TaskStatusSchema = Type.Union(
  ['working', 'input_required', 'completed', 'failed', 'cancelled'].map((s) => Type.Literal(s)),
  { description: 'working, input_required, or one of the terminal completed, failed, cancelled.' }
)

const taskFields = {
  taskId: Type.String(),
  status: TaskStatusSchema,
  statusMessage: Type.Optional(Type.String()),
  createdAt: Type.String({ description: 'ISO 8601.' }),
  lastUpdatedAt: Type.String({ description: 'ISO 8601.' }),
  ttlMs: Type.Integer({ description: 'The task may be discarded this long after its creation.' }),
  pollIntervalMs: Type.Integer({ description: 'Poll no more often than this.' })
}

export const CreateTaskResultSchema = Type.Object(
  { resultType: Type.Literal('task'), ...taskFields, _meta: Type.Optional(MetaSchema) },
  { $id: 'CreateTaskResult', description: 'The call runs as a task: poll Location (GET /tasks/{taskId}).' }
)

export const DetailedTaskSchema = Type.Object(
  {
    resultType: Type.Literal('complete'),
    ...taskFields,
    inputRequests: Type.Optional(InputRequestsSchema),
    result: Type.Optional(JsonObject('The final result (completed), e.g. a CallToolResult.')),
    error: Type.Optional(ErrorSchema)
  },
  { $id: 'DetailedTask', description: 'The task, with its result, error or outstanding inputRequests inlined.' }
)

export const UpdateTaskBodySchema = Type.Object({ inputResponses: InputResponsesSchema, _meta: Type.Optional(MetaSchema) })
export const CancelTaskBodySchema = Type.Object({ _meta: Type.Optional(MetaSchema) })
export const AckSchema = Type.Object({ resultType: Type.Literal('complete') }, { description: 'Acknowledged.' })
export type DetailedTask = Static<typeof DetailedTaskSchema>
export type CreateTaskResult = Static<typeof CreateTaskResultSchema>
