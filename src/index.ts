/** The public API of the package. */
export { McpServer, type McpServerOptions, type Representation } from './core/mcp-server.js'
export type * from './core/definitions.js'
export type { AnySchema, Infer, InferInput, StandardJsonSchema } from './core/standard-schema.js'
export { ANONYMOUS, type Principal, type RequestContext, type Logger } from './core/request-context.js'
export { mcpPlugin, type McpPluginOptions } from './app.js'
export type { JsonRpcOptions } from './jsonrpc/endpoint.js'
export { buildServer, type BuildServerOptions } from './server.js'
export { bearerAuth, DEFAULT_ALGORITHMS, type Authenticate, type BearerAuthOptions } from './auth/bearer.js'
export type { OAuthOptions } from './auth/oauth.js'
export type { ApiKey } from './auth/api-keys.js'
export { loopbackOnly, type HostOriginOptions } from './auth/origin.js'
export { McpError, ErrorCode, errors, catalogue, ConfigurationError, type McpErrorName, type CatalogueEntry } from './errors.js'
export { SUPPORTED_VERSIONS, LATEST_VERSION, type ProtocolVersion } from './protocol.js'
export { MemoryStore } from './store/memory.js'
export type {
  Store,
  StoreRoles,
  StoreCompanions,
  RateLimitBackend,
  ConnectionStore,
  Mailbox,
  Signals,
  TaskStore,
  IdempotencyStore,
  StoreLimits,
  LegacyClient,
  IdempotentStart
} from './store/types.js'
export { RedisStore, type RedisStoreOptions } from './store/redis.js'
export { createStore, type StoreConfig } from './store/index.js'
export type { PressureOptions } from './http/probes.js'
export type { RateLimitOptions } from './plugins/rate-limit.js'
export type { ServerCardOptions } from './http/server-card.js'
export { ServerCardSchema, AiCatalogSchema, SERVER_CARD_MEDIA_TYPE, type ServerCard, type AiCatalog } from './schema/server-card.js'
export { loadConfig, oauthFromConfig, apiKeysFromConfig, hostOriginFromConfig, trustProxyFromConfig, serverCardFromConfig, type Config } from './config.js'
export { elicit, elicitUrl, sample, listRoots, type Question, type Outcome, type Root, type SampledMessage } from './mrtr/questions.js'
export { resolver, full, type Resolver, type FullOutcome, type ResolverMap, type Values } from './mrtr/resolvers.js'
export { inputRequired, type HandRolledInputRequired } from './mrtr/rounds.js'
export { resumable, type Resumable } from './mrtr/resume.js'
export { StateSealer, type StateKey, type SealBinding } from './mrtr/seal.js'
export { encodeJsonHeader, mcpRequestId } from './headers.js'
export { PureHttpClient, McpHttpError, type PureHttpClientOptions, type ClientHandlers, type ClientRoot, type CallOptions, type CallToolOptions, type HandlerContext, type PollOptions, type InputRequest } from './client/client.js'
export { PureHttpTransport, type PureHttpTransportOptions, type JsonRpcMessage } from './client/sdk-transport.js'
export { dpopKeyFromJwk, generateDpopKey, type DpopKey } from './client/dpop.js'
export { verifyWebhook, listenForWebhooks, type RegisteredWebhook, type WebhookListener } from './client/webhooks.js'
export { MemoryWebhookStore } from './webhooks/memory.js'
export { RedisWebhookStore } from './webhooks/redis.js'
export type { WebhookOptions } from './webhooks/options.js'
export type { WebhookStore, WebhookRecord, PendingDelivery, ClaimedDelivery, DeliveryAttempt } from './webhooks/types.js'
export { UI_EXTENSION, UI_MIME_TYPE, isCspOrigin, type UiCsp, type UiPermissions, type UiResourceMeta, type UiToolMeta } from './core/apps.js'
