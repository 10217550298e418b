import { errors } from '../errors.js'
import { isPlainObject } from '../headers.js'
import {
  LATEST_LEGACY_VERSION,
  MetaKey,
  SUPPORTED_VERSIONS,
  era as eraOf,
  isSupportedVersion,
  type Era,
  type ProtocolVersion
} from '../protocol.js'
import { LoggingLevels } from '../schema/lifecycle.js'
import type { Incoming } from './message.js'

/** The version a JSON-RPC message is served in, and whether the client named it in the header. */
export interface Settled {
  version: ProtocolVersion
  era: Era
  fromHeader: boolean
}

type Message = Exclude<Incoming, { kind: 'response' }>

/**
 * Which protocol version serves a message, from its body first (as the official SDK's dual-era
 * endpoint does): a `_meta` envelope naming a version claims it, and the `MCP-Protocol-Version` header
 * must agree (else 400 -32020); `initialize` without a modern envelope is the legacy handshake; a
 * message without a claim is legacy traffic, unless its header names 2026-07-28, whose requests must
 * carry the envelope (400 -32602 naming what is missing). An unsupported version is 400 -32022.
 * `legacyDefault` serves legacy messages that send no header (clients before 2025-06-18 sent none).
 */
export function settleVersion(msg: Message, header: string | undefined, legacyDefault: ProtocolVersion): Settled {
  const meta = isPlainObject(msg.params._meta) ? msg.params._meta : undefined
  const claimed = meta !== undefined && Object.hasOwn(meta, MetaKey.protocolVersion)
  if (msg.method === 'initialize' && !(claimed && isModernClaim(meta))) {
    if (header !== undefined && headerEra(header) === 'modern') {
      throw errors.headerMismatch(`initialize is the legacy handshake, but MCP-Protocol-Version names ${header}`)
    }
    return byHeader(header, legacyDefault)
  }
  if (claimed) {
    const problem = envelopeProblem(meta)
    if (problem !== undefined) throw errors.invalidParams(`Invalid _meta envelope: ${problem}`)
    const version = meta[MetaKey.protocolVersion] as string
    if (header !== undefined && header !== version) {
      throw errors.headerMismatch(`MCP-Protocol-Version header (${header.slice(0, 64)}) does not match _meta protocol version (${version.slice(0, 64)})`)
    }
    if (!isSupportedVersion(version)) throw errors.unsupportedVersion(version.slice(0, 64), SUPPORTED_VERSIONS)
    if (header === undefined && msg.kind === 'request' && eraOf(version) === 'modern') {
      throw errors.headerMismatch('The MCP-Protocol-Version header is required')
    }
    return { version, era: eraOf(version), fromHeader: header !== undefined }
  }
  if (header !== undefined && headerEra(header) === 'modern' && msg.kind === 'request') {
    const missing = meta === undefined ? '_meta' : MetaKey.protocolVersion
    throw errors.invalidParams(`Protocol ${header} needs the per-request _meta envelope; missing: ${missing}`, { missing: [missing] })
  }
  return byHeader(header, legacyDefault)
}

/** The era a header names; an unsupported version is 400 -32022 whatever the body says. */
function headerEra(header: string): Era {
  if (!isSupportedVersion(header)) throw errors.unsupportedVersion(header.slice(0, 64), SUPPORTED_VERSIONS)
  return eraOf(header)
}

/** The header's version, or (legacy traffic without one) the legacy default; also what a `GET /mcp` is served in. */
export function byHeader(header: string | undefined, legacyDefault: ProtocolVersion): Settled {
  if (header === undefined) return { version: eraOf(legacyDefault) === 'legacy' ? legacyDefault : LATEST_LEGACY_VERSION, era: 'legacy', fromHeader: false }
  return { version: header as ProtocolVersion, era: headerEra(header), fromHeader: true }
}

/** A well-formed envelope naming a supported 2026-07-28-era version. */
function isModernClaim(meta: Record<string, unknown>): boolean {
  const v = meta[MetaKey.protocolVersion]
  return envelopeProblem(meta) === undefined && isSupportedVersion(v as string) && eraOf(v as ProtocolVersion) === 'modern'
}

/** What is wrong with a `_meta` envelope, in words, or undefined. */
function envelopeProblem(meta: Record<string, unknown>): string | undefined {
  if (typeof meta[MetaKey.protocolVersion] !== 'string') return `${MetaKey.protocolVersion} must be a string`
  if (!isPlainObject(meta[MetaKey.clientCapabilities])) return `${MetaKey.clientCapabilities} is required (an object)`
  const info = meta[MetaKey.clientInfo]
  if (info !== undefined && !(isPlainObject(info) && typeof info.name === 'string' && typeof info.version === 'string')) {
    return `${MetaKey.clientInfo} must be an object with a name and a version`
  }
  const level = meta[MetaKey.logLevel]
  if (level !== undefined && !(LoggingLevels as readonly unknown[]).includes(level)) {
    return `${MetaKey.logLevel} must be one of ${LoggingLevels.join(', ')}`
  }
  return undefined
}
