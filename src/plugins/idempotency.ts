import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify'
import { ErrorCode, McpError } from '../errors.js'
import { Header } from '../headers.js'
import { digestArguments } from '../mrtr/seal.js'
import type { IdempotencyStore } from '../store/types.js'
import fp from 'fastify-plugin'
import { copyOf } from '../core/results.js'

/** A claimed run of an idempotent tool call, kept on the request until its answer is sent. */
interface Claim {
  owner: string
  id: string
  renew: NodeJS.Timeout
}

const kClaim = Symbol('mcp.idempotencyClaim')
declare module 'fastify' {
  interface FastifyRequest {
    [kClaim]?: Claim
  }
}

/** Response headers that are part of what a replay repeats (a task's 202 links to it). */
const REPLAYED = ['content-type', 'location', 'retry-after'] as const

export interface IdempotencyOptions {
  /** How long a first outcome is replayed (ms); 0 turns deduplication off. */
  ttlMs: number
  /** How long a running claim lasts without renewal (ms): a retry after an instance failure waits at most this long. */
  leaseMs: number
}

/**
 * Identity of a message (the binding): a `POST /tools/{name}/calls` retried with the same
 * `Mcp-Request-Id` by the same principal gets the first outcome again, and the tool runs once. Only
 * ids the client sent are deduplicated (a generated one never repeats). The same id with another
 * request (tool, body, `_meta`/retry headers, protocol version) is 409; while the first attempt
 * runs, 409 with `Retry-After: 1`. Only answers that were delivered count: an error status, or a
 * client that went away before its answer (its `ctx.signal` aborted the handler), leaves nothing,
 * so that a retry runs again. A streamed call (`Accept: text/event-stream`) is not deduplicated: a
 * stream of events as they happened cannot be replayed.
 */
const idempotentToolCalls: FastifyPluginAsync<IdempotencyOptions & { store: IdempotencyStore }> = async (fastify, options) => {
  const store = options.store
  if (options.ttlMs <= 0) return
  const leaseMs = options.leaseMs
  const toolCall = `${fastify.prefix}/tools/:name/calls`

  // Run the first attempt, or answer a retry: only for requests that name their own id.
  const claim = async (request: FastifyRequest, reply: FastifyReply, id: string): Promise<void> => {
    const owner = request.mcpState.principal.id
    const h = request.headers
    const digest = digestArguments({
      tool: (request.params as { name: string }).name,
      body: request.body,
      version: request.mcpState.version,
      headers: [h[Header.meta], h[Header.inputResponses], h[Header.requestState]].map((v) => v ?? null)
    })
    const start = await store.beginIdempotent(owner, id, digest, leaseMs)
    switch (start.state) {
      case 'new': {
        const renew = setInterval(() => {
          store.renewIdempotent(owner, id, leaseMs).catch((err: unknown) => request.log.warn({ err }, 'idempotency lease not renewed'))
        }, leaseMs / 3).unref()
        // However the request ends, the claim is not renewed past it.
        reply.raw.once('close', () => clearInterval(renew))
        request[kClaim] = { owner, id, renew }
        return
      }
      case 'done': {
        const saved = JSON.parse(start.response) as { status: number; headers: Record<string, string>; body: string }
        const headers = copyOf(saved.headers)
        headers['idempotent-replayed'] = 'true'
        reply.code(saved.status).headers(headers).send(saved.body)
        return
      }
      case 'in_progress':
        throw new McpError(ErrorCode.invalidRequest, `A request with Mcp-Request-Id ${id} is still running: retry later`, 409, undefined, {
          'retry-after': '1'
        })
      case 'conflict':
        throw new McpError(ErrorCode.invalidRequest, `Mcp-Request-Id ${id} was already used for a different request`, 409)
    }
  }

  // Record a claimed run's outcome before the answer leaves: a retry that follows it finds it.
  const record = async (claim: Claim, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    clearInterval(claim.renew)
    const delivered = reply.statusCode < 300 && !(reply.raw.destroyed && !reply.raw.writableFinished)
    if (!delivered) {
      await store.abandonIdempotent(claim.owner, claim.id)
      return payload
    }
    const headers: Record<string, string> = {}
    for (const name of REPLAYED) {
      const v = reply.getHeader(name)
      if (v !== undefined) headers[name] = String(v)
    }
    await store.finishIdempotent(claim.owner, claim.id, JSON.stringify({ status: reply.statusCode, headers, body: payload }), options.ttlMs)
    return payload
  }

  // Hooks of the tools/call route alone, and synchronous when there is nothing to do (most calls
  // carry no Mcp-Request-Id): every other route, and every call without one, skips a promise each.
  const preHandler: preHandlerHookHandler = (request, reply, done) => {
    const id = request.headers[Header.requestId]
    if (id !== request.mcpState.requestId || request.headers.accept?.includes('text/event-stream') === true) return done()
    claim(request, reply, id).then(() => done(), done)
  }
  const onSend: onSendHookHandler = (request, reply, payload, done) => {
    const claimed = request[kClaim]
    if (claimed === undefined) return done(null, payload)
    request[kClaim] = undefined
    record(claimed, reply, payload).then((p) => done(null, p), done)
  }
  fastify.addHook('onRoute', (route) => {
    if (route.url !== toolCall || route.method !== 'POST') return
    route.preHandler = ([] as preHandlerHookHandler[]).concat(route.preHandler ?? [], preHandler)
    route.onSend = ([] as onSendHookHandler[]).concat(route.onSend ?? [], onSend)
  })
}

export default fp(idempotentToolCalls, { name: 'mcp-idempotency', fastify: '5.x' })
