import { Type, type Static } from '@sinclair/typebox'
import { ImplementationSchema, JsonObject, MetaSchema, cacheableFields, resultFields } from './common.js'

export const ClientCapabilitiesSchema = JsonObject('What the client supports: elicitation, sampling, roots, tasks, ...')
export const ServerCapabilitiesSchema = JsonObject('What the server offers: tools, prompts, resources, ...')

export const InitializeBodySchema = Type.Object({
  protocolVersion: Type.String({ maxLength: 64 }),
  capabilities: ClientCapabilitiesSchema,
  clientInfo: ImplementationSchema,
  _meta: Type.Optional(MetaSchema)
})
export type InitializeBody = Static<typeof InitializeBodySchema>

export const InitializeResultSchema = Type.Object({
  protocolVersion: Type.String(),
  capabilities: ServerCapabilitiesSchema,
  serverInfo: ImplementationSchema,
  instructions: Type.Optional(Type.String()),
  ...resultFields
}, { $id: 'InitializeResult', description: 'The negotiated version and what this server offers.' })
export type InitializeResult = Static<typeof InitializeResultSchema>

export const DiscoverResultSchema = Type.Object({
  supportedVersions: Type.Array(Type.String()),
  capabilities: ServerCapabilitiesSchema,
  serverInfo: ImplementationSchema,
  instructions: Type.Optional(Type.String()),
  ...cacheableFields
}, { $id: 'DiscoverResult', description: 'Supported versions, capabilities and identity of this server.' })
export type DiscoverResult = Static<typeof DiscoverResultSchema>

export const LoggingLevels = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const
export type LoggingLevel = (typeof LoggingLevels)[number]
export const LoggingLevelSchema = Type.Union(LoggingLevels.map((l) => Type.Literal(l)))

const LOG_RANK = new Map<string, number>(LoggingLevels.map((l, i) => [l, i]))

/** Whether a connection whose lowest level is `floor` (none: no log messages) takes a message at `level`. */
export function admitsLog(floor: string | undefined, level: LoggingLevel): boolean {
  const min = floor === undefined ? undefined : LOG_RANK.get(floor)
  return min !== undefined && LOG_RANK.get(level)! >= min
}

export const SetLevelBodySchema = Type.Object({ level: LoggingLevelSchema, _meta: Type.Optional(MetaSchema) })
export type SetLevelBody = Static<typeof SetLevelBodySchema>
