/** The SDK's JSON-RPC requests as Pure HTTP calls, and the shapes the SDK expects back. */
import type { PureHttpClient } from './client.js'
import { TASKS_EXTENSION } from './exchange.js'
import { McpHttpError, type Json, type PureHttpClientOptions } from './types.js'

/**
 * A JSON-RPC 2.0 message as the SDK's `Transport` passes it. Declared here, structurally, so that
 * this package needs no `@modelcontextprotocol/sdk` (not even its types) unless you use the SDK.
 */
export type JsonRpcMessage = { jsonrpc: '2.0'; id?: string | number; method?: string; params?: Json; result?: Json; error?: Json }

export interface PureHttpTransportOptions extends Pick<PureHttpClientOptions, 'url' | 'token' | 'dpop' | 'retry' | 'maxRounds'> {
  /**
   * The version spoken to the server. `2026-07-28`: the modern era (`GET /discover` for the
   * handshake, the `_meta` envelope and multi round-trip requests), whatever the SDK asked for; the
   * SDK is told the version it asked for. Default: the legacy era, in the version the SDK's
   * `initialize` asks for (2025-06-18 or 2025-11-25, else 2025-11-25).
   */
  protocolVersion?: string
  /** Pause between polls of `/notifications` (and `/requests`, legacy era) that found nothing (default 1000 ms). */
  pollIntervalMs?: number
}

export const LEGACY_VERSIONS = ['2025-06-18', '2025-11-25']

const LISTS: Record<string, '/tools' | '/prompts' | '/resources' | '/resources/templates'> = {
  'tools/list': '/tools',
  'prompts/list': '/prompts',
  'resources/list': '/resources',
  'resources/templates/list': '/resources/templates'
}

/** One SDK request (other than `initialize`, which the transport itself answers) through the client. */
export async function route(c: PureHttpClient, method: string, params: Json, signal: AbortSignal): Promise<Json> {
  const options = { signal, meta: params._meta as Json | undefined }
  const list = LISTS[method]
  if (list !== undefined) return c.page(list, params.cursor, options)
  switch (method) {
    case 'ping':
      return c.ping(options).then(empty)
    case 'logging/setLevel':
      return c.setLogLevel(params.level, options).then(empty)
    case 'completion/complete':
      return c.complete(params.ref, params.argument, params.context, options)
    case 'tools/call': {
      // A task the SDK asked for is handed to it (it polls tasks/get); any other is waited for here.
      const result = await c.callTool(params.name, params.arguments, { ...options, task: params.task, wait: params.task === undefined })
      return result.resultType === 'task' ? { task: sdkTask(result) } : plain(result)
    }
    case 'prompts/get':
      return plain(await c.getPrompt(params.name, params.arguments, options))
    case 'resources/read':
      return plain(await c.readResource(params.uri, options))
    case 'resources/subscribe':
      return c.subscribe(params.uri, options).then(empty)
    case 'resources/unsubscribe':
      return c.unsubscribe(params.uri, options).then(empty)
    case 'tasks/get':
      return sdkTask(await c.getTask(params.taskId, options))
    case 'tasks/result':
      return plain(await c.taskResult(params.taskId, options))
    case 'tasks/cancel':
      await c.cancelTask(params.taskId, options)
      return sdkTask(await c.getTask(params.taskId, options))
    default:
      throw new McpHttpError(`Method not found: ${method}`, -32601, 0)
  }
}

export const empty = (): Json => ({})

/** The server's capabilities, with the Tasks extension also said the way the SDK (2025-11-25) looks for it. */
export function sdkCapabilities(capabilities: Json): Json {
  if (capabilities.extensions?.[TASKS_EXTENSION] === undefined) return capabilities
  return { ...capabilities, tasks: { cancel: {}, requests: { tools: { call: {} } } } }
}

/** A Pure HTTP result without its `resultType` (the SDK's schemas predate it). */
export function plain(result: Json): Json {
  const { resultType: _, ...rest } = result
  return rest
}

/** A Pure HTTP task (`ttlMs`, `pollIntervalMs`) in the SDK's shape (`ttl`, `pollInterval`). */
export function sdkTask(task: Json): Json {
  const { taskId, status, ttlMs, createdAt, lastUpdatedAt, pollIntervalMs, statusMessage } = task
  return { taskId, status, ttl: ttlMs, createdAt, lastUpdatedAt, pollInterval: pollIntervalMs, statusMessage }
}
