import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Claim, IdempotentCalls } from '../core/idempotency.js'
import { Header, isPlainObject } from '../headers.js'
import { digestArguments } from '../mrtr/digest.js'
import type { ProtocolVersion } from '../protocol.js'
import { resultText, type RequestId } from './message.js'
import { headerValue } from './standard-headers.js'

/** What {@link claimCall} answers when it has sent the replay itself. */
export const REPLAYED = Symbol('replayed')

/**
 * The /mcp face of {@link IdempotentCalls}: a `tools/call` whose POST carries the client's own
 * `Mcp-Request-Id` header runs once per principal and key, as on `POST /tools/{name}/calls`. The
 * JSON-RPC id is no such key: clients reuse it across unrelated requests (every stateless request
 * may be id 1), and a retry may carry a new one. Two requests are the same when their version and
 * params are, but for `_meta.progressToken`, which names one attempt's notifications (the SDKs
 * derive it from the JSON-RPC id). A replay is the first result under the retry's own id, in one
 * JSON body with `Idempotent-Replayed: true`, even when the first run was streamed: the retry gets
 * the outcome, not the notifications again. Only results count; a JSON-RPC error leaves nothing.
 */
export async function claimCall(
  calls: IdempotentCalls,
  request: FastifyRequest,
  reply: FastifyReply,
  id: RequestId,
  params: Record<string, unknown>,
  version: ProtocolVersion
): Promise<Claim | typeof REPLAYED | undefined> {
  const key = headerValue(request.headers, Header.requestId)
  if (!calls.enabled || key === undefined) return undefined
  const meta = isPlainObject(params._meta) ? { ...params._meta, progressToken: undefined } : params._meta
  // The face is part of the request: an id used on the other face is another request (409), and
  // the two faces keep different texts.
  const digest = digestArguments({ face: 'jsonrpc', version, params: { ...params, _meta: meta } })
  const start = await calls.begin(request.mcpState.principal.id, key, digest, (err) => request.log.warn({ err }, 'idempotency lease not renewed'))
  if (start.state === 'new') {
    reply.raw.once('close', start.claim.stop)
    return start.claim
  }
  reply.header('idempotent-replayed', 'true').type('application/json; charset=utf-8').send(resultText(id, start.outcome))
  return REPLAYED
}

/** Keep the result text for retries if its answer is still on its way to the client; else give the key back. */
export function record(claim: Claim, reply: FastifyReply, result: string): Promise<void> {
  const res = reply.raw
  return res.destroyed && !res.writableFinished ? claim.abandon() : claim.finish(result)
}
