import { errors } from './errors.js'

/** Protocol revisions this server speaks, newest first. */
export const SUPPORTED_VERSIONS = ['2026-07-28', '2025-11-25', '2025-06-18'] as const
export type ProtocolVersion = (typeof SUPPORTED_VERSIONS)[number]
export const LATEST_VERSION: ProtocolVersion = '2026-07-28'
export const LATEST_LEGACY_VERSION: ProtocolVersion = '2025-11-25'

/**
 * `legacy`: 2025-06-18 and 2025-11-25 (initialize, server-to-client requests on /requests).
 * `modern`: 2026-07-28 (per-request `_meta` envelope, `resultType`, cache hints, MRTR).
 */
export type Era = 'legacy' | 'modern'

const eraOf: Record<ProtocolVersion, Era> = {
  '2026-07-28': 'modern',
  '2025-11-25': 'legacy',
  '2025-06-18': 'legacy'
}

export function isSupportedVersion(v: string): v is ProtocolVersion {
  return Object.hasOwn(eraOf, v)
}

export function era(version: ProtocolVersion): Era {
  return eraOf[version]
}

/** The version of one request: its `Mcp-Protocol-Version` header, else the configured default. */
export function negotiateVersion(header: string | undefined, fallback: ProtocolVersion): ProtocolVersion {
  if (header === undefined || header === '') return fallback
  const v = header.trim()
  if (!isSupportedVersion(v)) throw errors.unsupportedVersion(v.slice(0, 64), SUPPORTED_VERSIONS)
  return v
}

/** Reserved `_meta` keys of the 2026-07-28 per-request envelope. */
export const MetaKey = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  progressToken: 'progressToken',
  logLevel: 'io.modelcontextprotocol/logLevel'
} as const
