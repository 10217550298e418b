import { Type, type Static } from '@sinclair/typebox'
import { JsonObject } from './common.js'

/** A message without the JSON-RPC envelope: a notification or a server-to-client request. */
export const MessageSchema = Type.Object(
  { method: Type.String({ minLength: 1, maxLength: 128 }), params: Type.Optional(JsonObject()) },
  { description: 'A JSON-RPC notification or request without its envelope.' }
)

export const ServerNotificationsSchema = Type.Array(MessageSchema, {
  description: 'Queued notifications, oldest first; the same group until it is acknowledged.'
})

export const ClientNotificationsSchema = Type.Array(MessageSchema, {
  maxItems: 100,
  description: 'Notifications for the server: notifications/cancelled, notifications/initialized, notifications/roots/list_changed.'
})
export type ClientNotifications = Static<typeof ClientNotificationsSchema>

/** The body of `POST /responses`: the client's result, or an error when it could not answer. */
export const ClientResponseSchema = Type.Union(
  [
    Type.Object({ error: Type.Object({ code: Type.Integer(), message: Type.String(), data: Type.Optional(Type.Unknown()) }) }),
    JsonObject('The ClientResult: an ElicitResult, CreateMessageResult or ListRootsResult.')
  ],
  { description: 'The ClientResult for the request named by Mcp-Request-Id, or `{ "error": {...} }`.' }
)

export const MessageGroupHeaders = Type.Object({
  'mcp-protocol-version': Type.Optional(Type.String({ maxLength: 64 })),
  'mcp-message-group': Type.Optional(Type.String({ maxLength: 128, description: 'The group being acknowledged.' })),
  'mcp-group-id': Type.Optional(Type.String({ maxLength: 128, description: 'Alias of Mcp-Message-Group.' }))
})
