import { errors } from '../errors.js'
import type { ClientNotifications } from '../schema/messaging.js'
import type { ClientAnswer, NotificationGroup, QueuedRequest, ServerMessage, StoreRoles } from '../store/types.js'
import { answerRequest } from './answers.js'

/**
 * Messages between server and client outside a call's own answer (SEP-1612's notifications and
 * server-to-client requests), for both faces: `McpServer.messages`.
 */
export class Messages {
  readonly #listeners = new Set<(owner: string, notification: ServerMessage) => void>()

  constructor(readonly store: () => Pick<StoreRoles, 'mailbox' | 'signals'>) {}

  /** The connection's current group of notifications, the same until acknowledged; undefined when none. */
  takeNotifications(owner: string): Promise<NotificationGroup | undefined> {
    return this.store().mailbox.takeNotifications(owner)
  }

  /** Acknowledge a group handed out by {@link takeNotifications}; 404 when it is not the current one. */
  async acknowledge(owner: string, groupId: string): Promise<void> {
    if (!(await this.store().mailbox.ackNotifications(owner, groupId))) throw errors.unknownMessageGroup(groupId)
  }

  /** The client's notifications: cancellation aborts the request it names; the rest go to the listeners. */
  async receive(owner: string, notifications: ClientNotifications): Promise<void> {
    for (const n of notifications) {
      if (n.method === 'notifications/cancelled') {
        const id = n.params?.requestId
        if (typeof id !== 'string' && typeof id !== 'number') throw errors.invalidParams('notifications/cancelled needs params.requestId')
        await this.cancel(owner, String(id), n.params?.reason)
      } else {
        // initialized, roots/list_changed and anything newer.
        for (const l of this.#listeners) l(owner, n)
      }
    }
  }

  /** Abort the running request `requestId` of `owner`, on whichever instance runs it. */
  cancel(owner: string, requestId: string, reason: unknown): Promise<void> {
    return this.store().signals.publishCancel(owner, requestId, typeof reason === 'string' ? reason.slice(0, 256) : undefined)
  }

  /** Hand out the connection's oldest waiting server-to-client request (legacy era), or undefined. */
  takeRequest(owner: string): Promise<QueuedRequest | undefined> {
    return this.store().mailbox.claimRequest(owner)
  }

  /** The client's answer to a server-to-client request, checked against the question. */
  answer(owner: string, id: string, answer: ClientAnswer): Promise<void> {
    return answerRequest(this.store().mailbox, owner, id, answer)
  }

  /** Hear the client's notifications other than cancellation; returns the function that stops. */
  onClientNotification(listener: (owner: string, notification: ServerMessage) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
}
