import { errors } from '../errors.js'
import { askedOf, checkResponse } from '../mrtr/responses.js'
import type { ClientAnswer, Mailbox } from '../store/types.js'

/**
 * A client's answer to a server-to-client request it was handed (by `POST /requests`, or as a
 * JSON-RPC request on the SSE stream of its POST to `/mcp`): check it against what was asked, then
 * complete the request through the store, which wakes the waiting handler on whichever instance runs
 * it. An error answer is passed on as it is. 404 when the request is unknown, another owner's, or
 * already answered; 400 -32602 when the result does not fit the question.
 *
 * @example
 * await answerRequest(store.mailbox, principal.id, id, { result: { action: 'accept', content: { city: 'Oslo' } } })
 */
export async function answerRequest(store: Mailbox, owner: string, id: string, answer: ClientAnswer): Promise<void> {
  const queued = await store.getRequest(owner, id)
  if (queued === undefined) throw unknown(id)
  if ('result' in answer) checkResponse('response', askedOf(queued.request), answer.result)
  if (!(await store.completeRequest(owner, id, answer))) throw unknown(id)
}

const unknown = (id: string) => errors.unknownRequest(id)
