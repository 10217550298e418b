import { randomUUID } from 'node:crypto'
import type { RequestContext } from '../core/request-context.js'
import { errors } from '../errors.js'
import { metaProgressToken, type Outlet } from '../core/call-context.js'
import { MetaKey } from '../protocol.js'
import { missingCapabilities, type Question } from '../mrtr/questions.js'
import type { Mailbox, StoreRoles } from '../store/types.js'

/**
 * Notifications of a call queued on its logical connection, for `GET /notifications`: progress when
 * the request carries a `progressToken`; log messages at or above the request's
 * `_meta["io.modelcontextprotocol/logLevel"]` in 2026-07-28, the connection's `POST /logLevel` before.
 */
export function queueOutlet(store: () => Pick<StoreRoles, 'mailbox' | 'connections'>): Outlet {
  return {
    progressToken: metaProgressToken,
    logFloor: (ctx) => (ctx.era === 'modern' ? ctx.meta?.[MetaKey.logLevel] : store().connections.getLogLevel(ctx.principal.id)),
    send: (ctx, message) => store().mailbox.pushNotification(ctx.principal.id, message)
  }
}

/**
 * Legacy era: put each question on the connection's `/requests` queue (and, through
 * `ctx.deliverRequest`, on the SSE stream of a JSON-RPC POST) and wait for the answers, which
 * `answerRequest` (./answers.ts) checks against the question before waking us. Questions the client did
 * not declare in `initialize` are 400 -32021, as in the modern era.
 */
export async function askThroughQueue(
  store: Mailbox,
  ctx: RequestContext,
  questions: ReadonlyMap<string, Question<unknown>>,
  timeoutMs: number
): Promise<Record<string, Record<string, unknown>>> {
  requireCapabilities(questions.values(), ctx)
  const owner = ctx.principal.id
  const pending = await Promise.all(
    [...questions].map(async ([key, q]) => {
      const id = randomUUID()
      await store.enqueueRequest(owner, id, q.request)
      // Queued first, so that an answer arriving at once finds it (through the store, on any instance).
      ctx.deliverRequest?.(id, q.request)
      return { key, id, method: q.request.method }
    })
  )
  const answers: Record<string, Record<string, unknown>> = {}
  await Promise.all(
    pending.map(async ({ key, id, method }) => {
      const answer = await store.awaitAnswer(owner, id, ctx.signal, timeoutMs)
      if ('error' in answer) throw new Error(`The client answered ${method} with an error: ${answer.error.message}`)
      answers[key] = answer.result
    })
  )
  return answers
}

/** 400 -32021 with `requiredCapabilities` when the client cannot be asked all of `questions`. */
export function requireCapabilities(questions: Iterable<Question<unknown>>, ctx: RequestContext): void {
  const missing = missingCapabilities(questions, ctx.clientCapabilities)
  if (missing !== undefined) {
    throw errors.missingCapability(missing, `This request needs the client capabilities: ${Object.keys(missing).join(', ')}`)
  }
}
