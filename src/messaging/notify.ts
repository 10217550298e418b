import { randomUUID } from 'node:crypto'
import type { RequestContext } from '../core/context.js'
import { errors } from '../errors.js'
import { LoggingLevels, type LoggingLevel } from '../schema/lifecycle.js'
import { MetaKey } from '../protocol.js'
import { missingCapabilities, type Question } from '../mrtr/questions.js'
import type { Store } from '../store/types.js'

const RANK = new Map<string, number>(LoggingLevels.map((l, i) => [l, i]))

/**
 * `notifications/progress` for a request that asked for it (a `progressToken` in its `_meta`);
 * nothing otherwise. Queued on the caller's logical connection.
 */
export async function sendProgress(store: Store, ctx: RequestContext, progress: number, total?: number, message?: string) {
  const token = ctx.meta?.[MetaKey.progressToken]
  if (typeof token !== 'string' && typeof token !== 'number') return
  const params: Record<string, unknown> = { progressToken: token, progress }
  if (total !== undefined) params.total = total
  if (message !== undefined) params.message = message
  await store.pushNotification(ctx.principal.id, { method: 'notifications/progress', params })
}

/**
 * `notifications/message` when the client's level lets it through: the request's
 * `_meta["io.modelcontextprotocol/logLevel"]` in 2026-07-28 (absent: none), the connection's
 * `POST /logLevel` before it (unset: none).
 */
export async function sendLog(store: Store, ctx: RequestContext, level: LoggingLevel, data: unknown, logger?: string) {
  const min = ctx.era === 'modern' ? ctx.meta?.[MetaKey.logLevel] : await store.getLogLevel(ctx.principal.id)
  const floor = typeof min === 'string' ? RANK.get(min) : undefined
  if (floor === undefined || RANK.get(level)! < floor) return
  const params: Record<string, unknown> = { level, data }
  if (logger !== undefined) params.logger = logger
  await store.pushNotification(ctx.principal.id, { method: 'notifications/message', params })
}

/**
 * Legacy era: put each question on the connection's `/requests` queue (and, through
 * `ctx.deliverRequest`, on the SSE stream of a JSON-RPC POST) and wait for the answers, which
 * `answerRequest` (./answers.ts) checks against the question before waking us. Questions the client did
 * not declare in `initialize` are 400 -32021, as in the modern era.
 */
export async function askThroughQueue(
  store: Store,
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
