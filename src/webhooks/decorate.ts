import { overlay } from '../store/compose.js'
import type { Mailbox, Store } from '../store/types.js'
import type { WebhookService } from './service.js'

/**
 * The store as the core sees it once webhooks are on: its mailbox's `pushNotification` offers the
 * message to the connection's webhooks first, and queues it only when none takes it (or the offer
 * fails: a store error must not lose it); `broadcast` (list_changed) likewise, for every connection
 * with a webhook. Every other role and method is the store's own.
 */
export function withWebhooks(store: Store, service: WebhookService): Store {
  const mailbox = store.mailbox
  const pushNotification: Mailbox['pushNotification'] = async (owner, notification) => {
    const taken = await service.offer(owner, notification).catch((err: unknown) => {
      service.log.warn({ err }, 'webhooks: could not offer a notification; it is queued instead')
      return false
    })
    if (!taken) await mailbox.pushNotification(owner, notification)
  }
  const broadcast: Mailbox['broadcast'] = async (notification, except) => {
    const taken = await service.offerAll(notification).catch((err: unknown) => {
      service.log.warn({ err }, 'webhooks: could not offer a broadcast; it is queued instead')
      return new Set<string>()
    })
    await mailbox.broadcast(notification, except === undefined ? taken : new Set([...except, ...taken]))
  }
  return overlay(store, { mailbox: overlay(mailbox, { pushNotification, broadcast }) })
}
