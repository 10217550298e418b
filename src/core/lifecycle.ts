import { LATEST_LEGACY_VERSION, SUPPORTED_VERSIONS, era as eraOf, isSupportedVersion, type Era, type ProtocolVersion } from '../protocol.js'
import type { DiscoverResult, InitializeBody, InitializeResult } from '../schema/lifecycle.js'
import type { CallContext } from './call-context.js'
import type { McpServer } from './mcp-server.js'
import { finish } from './results.js'

/** What this server offers; the same for every client. */
export const CAPABILITIES: Readonly<Record<string, unknown>> = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  completions: {},
  logging: {},
  extensions: { 'io.modelcontextprotocol/tasks': {} }
}

/**
 * A part of {@link CAPABILITIES} a server may leave out (a gateway offers what its upstream does):
 * the methods of a part left out answer -32601, as a server without that capability does.
 */
export type Offer = 'tools' | 'prompts' | 'resources' | 'subscribe' | 'completions' | 'logging'
export type Offers = Readonly<Record<Offer, boolean>>

export const ALL_OFFERED: Offers = { tools: true, prompts: true, resources: true, subscribe: true, completions: true, logging: true }

/** What an MCP `capabilities` object offers (`resources.subscribe` is the subscribe part). */
export function offersOf(capabilities: Record<string, unknown>): Offers {
  const resources = capabilities.resources as { subscribe?: unknown } | undefined
  return {
    tools: capabilities.tools !== undefined,
    prompts: capabilities.prompts !== undefined,
    resources: resources !== undefined,
    subscribe: resources?.subscribe === true,
    completions: capabilities.completions !== undefined,
    logging: capabilities.logging !== undefined
  }
}

/** {@link CAPABILITIES} without the parts not offered. */
export function capabilitiesOf(offers: Offers): Record<string, unknown> {
  const caps = structuredClone(CAPABILITIES) as Record<string, Record<string, unknown>>
  for (const part of ['tools', 'prompts', 'resources', 'completions', 'logging'] as const) if (!offers[part]) delete caps[part]
  if (!offers.subscribe) delete caps.resources?.subscribe
  return caps
}

/** What `initialize` answers, and the session it opened (`issueSession`). */
export interface Initialized {
  result: InitializeResult & { protocolVersion: ProtocolVersion }
  sessionId?: string
}

export interface InitializeOptions {
  /** Open a session (`Mcp-Session-Id`, Pure HTTP without authentication); it is then the connection. */
  issueSession?: boolean
  /** The JSON-RPC face's handshake is the legacy era's: asking for 2026-07-28 gets the newest legacy version. */
  legacyOnly?: boolean
}

/** See {@link McpServer.initialize}. */
export async function initialize(server: McpServer, body: InitializeBody, ctx: CallContext, options: InitializeOptions): Promise<Initialized> {
  const asked = isSupportedVersion(body.protocolVersion) && !(options.legacyOnly === true && eraOf(body.protocolVersion) === 'modern')
  const protocolVersion = asked ? (body.protocolVersion as ProtocolVersion) : LATEST_LEGACY_VERSION
  const result: Initialized['result'] = { protocolVersion, capabilities: server.capabilities(), serverInfo: server.serverInfo }
  if (server.instructions !== undefined) result.instructions = server.instructions
  const out: Initialized = { result: finish(eraOf(protocolVersion), result) }
  let owner = ctx.principal.id
  if (options.issueSession === true) {
    out.sessionId = await server.store.connections.createSession()
    owner = `session:${out.sessionId}`
  }
  if (eraOf(protocolVersion) === 'legacy') {
    await server.store.connections.setLegacyClient(owner, { protocolVersion, capabilities: body.capabilities, clientInfo: body.clientInfo })
  }
  return out
}

/** The `server/discover` result of an era (serialized once by the server's list cache). */
export function discoverResult(server: McpServer, era: Era): DiscoverResult {
  const result: DiscoverResult = { supportedVersions: [...SUPPORTED_VERSIONS], capabilities: server.capabilities(), serverInfo: server.serverInfo }
  if (server.instructions !== undefined) result.instructions = server.instructions
  // 2026-07-28 identifies the server in the result's _meta (the body field is the older form).
  if (era === 'modern') result._meta = { 'io.modelcontextprotocol/serverInfo': server.serverInfo }
  return result
}
