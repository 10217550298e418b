import { Type } from '@sinclair/typebox'

const Events = Type.Array(
  Type.String({ pattern: '^notifications/[A-Za-z0-9_./-]{1,120}$', description: 'A notification method, e.g. notifications/progress.' }),
  { minItems: 1, maxItems: 32, description: 'The notifications to deliver; absent: all of the connection\'s.' }
)

export const RegisterWebhookBodySchema = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'https URL that receives the deliveries (http only for MCP_WEBHOOK_ALLOWED_HOSTS).' }),
    events: Type.Optional(Events)
  },
  { additionalProperties: false }
)

const props = {
  id: Type.String(),
  url: Type.String(),
  events: Type.Optional(Events),
  createdAt: Type.String({ format: 'date-time' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
  disabledReason: Type.Optional(Type.String({ description: 'Why deliveries stopped (410 Gone, or messages in a row that failed).' })),
  disabledAt: Type.Optional(Type.String({ format: 'date-time' })),
  consecutiveFailures: Type.Integer({ minimum: 0, description: 'Messages in a row that exhausted their attempts.' })
}

export const WebhookSchema = Type.Object(props, { description: 'A webhook of the caller\'s logical connection.' })

export const CreatedWebhookSchema = Type.Object(
  { ...props, secret: Type.String({ description: 'whsec_<base64>: the signing secret, shown only in this answer.' }) },
  { description: 'The new webhook and its signing secret.' }
)

export const WebhookListSchema = Type.Object({ webhooks: Type.Array(WebhookSchema) })

export const DeliveryAttemptSchema = Type.Object({
  messageId: Type.String({ description: 'The webhook-id header: the same for every attempt of one message.' }),
  attempt: Type.Integer({ minimum: 1 }),
  at: Type.String({ format: 'date-time' }),
  status: Type.Union([Type.Literal('delivered'), Type.Literal('retrying'), Type.Literal('returned')], {
    description: 'returned: the message went back to GET /notifications.'
  }),
  responseStatus: Type.Optional(Type.Integer()),
  durationMs: Type.Integer({ minimum: 0 }),
  error: Type.Optional(Type.String()),
  nextRetryAt: Type.Optional(Type.String({ format: 'date-time' }))
})

export const DeliveriesSchema = Type.Object({ deliveries: Type.Array(DeliveryAttemptSchema) })

export const WebhookParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })
