import type { FastifyReply, FastifyRequest } from 'fastify'
import { Header, decodeJsonHeader } from '../headers.js'
import type { Era } from '../protocol.js'
import type { Meta } from '../schema/common.js'
import { createContext } from './request.js'

/**
 * For routes with no handler context (lists, discover, ping): decode and check `Mcp-Meta` (a bad one is
 * 400, never ignored) and let its envelope settle the version. Returns the era to answer in; at once,
 * without a promise, when the request has no `Mcp-Meta` (most of them).
 */
export function settleGet(request: FastifyRequest, reply: FastifyReply): Era | Promise<Era> {
  const raw = request.headers[Header.meta]
  if (raw === undefined) return request.mcpState.era
  return settleMeta(request, reply, raw)
}

async function settleMeta(request: FastifyRequest, reply: FastifyReply, raw: string | string[]): Promise<Era> {
  const meta = decodeJsonHeader(Header.meta, raw, 'object') as Meta
  return (await createContext(request, reply, { _meta: meta })).era
}
