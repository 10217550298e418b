/** Server-to-client messages: `GET /notifications` (acknowledged by group) and `POST /requests`. */
import type { HttpExchange } from './exchange.js'
import { McpHttpError, type CallOptions, type InputRequest, type Json, type PollOptions } from './types.js'

/** One `GET /notifications`: deliver the group, then acknowledge it. True when there was one. */
export async function pollNotifications(x: HttpExchange, onNotification: PollOptions['onNotification'], options: CallOptions): Promise<boolean> {
  const res = await x.get('/notifications', options)
  const group = res.headers.get('mcp-message-group')
  if (group === null) return false
  for (const n of res.body as Json[]) await onNotification?.(n)
  await x.send('POST', '/notifications', { headers: { 'mcp-message-group': group } })
  return true
}

/**
 * One `POST /requests`: answer the request handed out, if any. True when there was one. `answered`
 * keeps an answer until the server has it: a redelivery after a lost answer is answered again from
 * memory, not asked again.
 */
export async function pollRequests(
  x: HttpExchange,
  answer: (request: InputRequest, context: { signal?: AbortSignal }) => Promise<Json>,
  answered: Map<string, Json>,
  options: CallOptions
): Promise<boolean> {
  const res = await x.send('POST', '/requests', { signal: options.signal })
  if (res.status === 204) return false
  const id = res.headers.get('mcp-request-id') as string
  let reply = answered.get(id)
  if (reply === undefined) {
    try {
      reply = await answer(res.body as InputRequest, { signal: options.signal })
    } catch (err) {
      const e = err as { code?: unknown; message: string }
      reply = { error: { code: typeof e.code === 'number' ? e.code : -32603, message: e.message } }
    }
    answered.set(id, reply)
  }
  try {
    await x.send('POST', '/responses', { body: reply, requestId: id })
  } catch (err) {
    // 404: answered already (an earlier answer arrived after all), nothing left to do.
    if (!(err instanceof McpHttpError && err.status === 404)) throw err
  }
  answered.delete(id)
  return true
}
