import type { Static } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Representation } from '../core/mcp-server.js'
import { etagOf, ifNoneMatch } from '../core/etag.js'
import type { CacheHints } from '../core/results.js'
import type { Era } from '../protocol.js'
import type { CursorQuery } from '../schema/http.js'
import { settleGet } from './meta.js'
import { isThenable, type MaybePromise } from '../core/maybe-promise.js'

const JSON_TYPE = 'application/json; charset=utf-8'
const VARY = 'Mcp-Protocol-Version, Mcp-Meta, Authorization'

/**
 * Send a cacheable representation: ETag, Cache-Control from the server's cache hints, Vary on the
 * headers that change it, and 304 with no body when `If-None-Match` already names it.
 */
export function sendRepresentation(request: FastifyRequest, reply: FastifyReply, rep: Representation, hints: CacheHints) {
  reply.header('etag', rep.etag)
  reply.header('cache-control', `${hints.cacheScope}, max-age=${Math.floor(hints.ttlMs / 1000)}`)
  // Added to, not replaced: CORS has said `Vary: Origin` already.
  const vary = reply.getHeader('vary')
  reply.header('vary', vary === undefined ? VARY : `${String(vary)}, ${VARY}`)
  if (ifNoneMatch(request.headers['if-none-match'], rep.etag)) return reply.code(304).send()
  return reply.type(JSON_TYPE).send(rep.bytes ?? rep.body)
}

/** A list's GET: its query is the route's schema, the page's cursor. */
export type ListRequest = FastifyRequest<{ Querystring: Static<typeof CursorQuery> }>

/**
 * The handler of a GET the server answers from what it keeps serialized (lists, discover). It runs
 * synchronously when the request has no `Mcp-Meta`, as nearly all do: a revalidation or a cache hit
 * then makes no promise and waits for no microtask.
 */
export function serveCached<R extends FastifyRequest>(hints: CacheHints, pick: (request: R, era: Era) => Representation) {
  return (request: R, reply: FastifyReply): Promise<void> | undefined => {
    const era = settleGet(request, reply)
    // Mcp-Meta is settled through the request's context first: that promise ends with the reply (sendWhenReady).
    if (era instanceof Promise) return sendWhenReady(reply, era, (r, settled) => sendRepresentation(request, r, pick(request, settled), hints))
    sendRepresentation(request, reply, pick(request, era), hints)
    return undefined
  }
}

/** Send a computed result; with `cacheable`, as a representation with its own ETag. */
export function sendResult(
  request: FastifyRequest,
  reply: FastifyReply,
  result: object,
  cacheable?: CacheHints
): FastifyReply {
  const body = JSON.stringify(result)
  if (cacheable !== undefined && (result as { resultType?: string }).resultType !== 'input_required') {
    return sendRepresentation(request, reply, { body, etag: etagOf(body) }, cacheable)
  }
  return reply.type(JSON_TYPE).send(body)
}

/**
 * Send `value` with `send` now, or once it arrives. The promise Fastify then gets ends with the
 * reply, whose own `then` waits until the response is written (an async onSend hook, idempotency's,
 * may still run): ending with nothing would have Fastify send a second time.
 */
export function sendWhenReady<T>(reply: FastifyReply, value: MaybePromise<T>, send: (reply: FastifyReply, value: T) => unknown): Promise<void> | undefined {
  if (isThenable(value)) return sendLater(reply, value as PromiseLike<T>, send)
  send(reply, value as T)
  return undefined
}

async function sendLater<T>(reply: FastifyReply, value: PromiseLike<T>, send: (reply: FastifyReply, value: T) => unknown): Promise<void> {
  send(reply, await value)
  return reply
}

/** An answer with a status and no body (202 Accepted, 204 No Content). */
export function sendEmpty(reply: FastifyReply, status: 202 | 204): FastifyReply {
  return reply.code(status).send()
}
