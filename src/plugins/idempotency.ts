import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify'
import { Header } from '../headers.js'
import { digestArguments } from '../mrtr/seal.js'
import fp from 'fastify-plugin'
import { copyOf } from '../core/results.js'
import type { Claim, IdempotentCalls } from '../core/idempotency.js'

const kClaim = Symbol('mcp.idempotencyClaim')
declare module 'fastify' {
  interface FastifyRequest {
    [kClaim]?: Claim
  }
}

/** Response headers that are part of what a replay repeats (a task's 202 links to it). */
const REPLAYED = ['content-type', 'location', 'retry-after'] as const

/**
 * Identity of a message (the binding), the Pure HTTP face of {@link IdempotentCalls}: a
 * `POST /tools/{name}/calls` retried with the same `Mcp-Request-Id` by the same principal gets the
 * first outcome again, and the tool runs once. Only ids the client sent are deduplicated (a
 * generated one never repeats). The same id with another request (tool, body, `_meta`/retry
 * headers, protocol version) is 409; while the first attempt runs, 409 with `Retry-After: 1`. Only
 * answers that were delivered count: an error status, or a client that went away before its answer
 * (its `ctx.signal` aborted the handler), leaves nothing, so that a retry runs again. A streamed
 * call (`Accept: text/event-stream`) is not deduplicated: a stream of events as they happened
 * cannot be replayed. What is kept is the HTTP answer: status, body and {@link REPLAYED} headers.
 */
const idempotentToolCalls: FastifyPluginAsync<{ calls: IdempotentCalls }> = async (fastify, { calls }) => {
  if (!calls.enabled) return
  const toolCall = `${fastify.prefix}/tools/:name/calls`

  // Run the first attempt, or answer a retry: only for requests that name their own id.
  const claim = async (request: FastifyRequest, reply: FastifyReply, id: string): Promise<void> => {
    const h = request.headers
    const digest = digestArguments({
      tool: (request.params as { name: string }).name,
      body: request.body,
      version: request.mcpState.version,
      headers: [h[Header.meta], h[Header.inputResponses], h[Header.requestState]].map((v) => v ?? null)
    })
    const start = await calls.begin(request.mcpState.principal.id, id, digest, (err) => request.log.warn({ err }, 'idempotency lease not renewed'))
    if (start.state === 'new') {
      // However the request ends, the claim is not renewed past it.
      reply.raw.once('close', start.claim.stop)
      request[kClaim] = start.claim
      return
    }
    const saved = JSON.parse(start.outcome) as { status: number; headers: Record<string, string>; body: string }
    const headers = copyOf(saved.headers)
    headers['idempotent-replayed'] = 'true'
    reply.code(saved.status).headers(headers).send(saved.body)
  }

  // Record a claimed run's outcome before the answer leaves: a retry that follows it finds it.
  const record = async (claim: Claim, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    const delivered = reply.statusCode < 300 && !(reply.raw.destroyed && !reply.raw.writableFinished)
    if (!delivered) {
      await claim.abandon()
      return payload
    }
    const headers: Record<string, string> = {}
    for (const name of REPLAYED) {
      const v = reply.getHeader(name)
      if (v !== undefined) headers[name] = String(v)
    }
    await claim.finish(JSON.stringify({ status: reply.statusCode, headers, body: payload }))
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

export default fp(idempotentToolCalls, {
  name: 'mcp-idempotency',
  fastify: '5.x',
  // Reads request.mcpState (the request id, version and principal), which admission sets.
  dependencies: ['mcp-admission']
})
