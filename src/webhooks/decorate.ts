import type { Store } from '../store/types.js'
import type { WebhookService } from './service.js'

/**
 * The store as the core sees it once webhooks are on: `pushNotification` offers the message to the
 * connection's webhooks first, and queues it only when none takes it (or the offer fails: a store
 * error must not lose it); `broadcast` (list_changed) likewise, for every connection with a webhook.
 * Every other method is the store's own, bound to it (private fields).
 */
export function withWebhooks(store: Store, service: WebhookService): Store {
  const bound = new Map<PropertyKey, unknown>()
  const pushNotification: Store['pushNotification'] = async (owner, notification) => {
    const taken = await service.offer(owner, notification).catch((err: unknown) => {
      service.log.warn({ err }, 'webhooks: could not offer a notification; it is queued instead')
      return false
    })
    if (!taken) await store.pushNotification(owner, notification)
  }
  const broadcast: Store['broadcast'] = async (notification, except) => {
    const taken = await service.offerAll(notification).catch((err: unknown) => {
      service.log.warn({ err }, 'webhooks: could not offer a broadcast; it is queued instead')
      return new Set<string>()
    })
    await store.broadcast(notification, except === undefined ? taken : new Set([...except, ...taken]))
  }
  return new Proxy(store, {
    get(target, key) {
      if (key === 'pushNotification') return pushNotification
      if (key === 'broadcast') return broadcast
      const value: unknown = Reflect.get(target, key, target)
      if (typeof value !== 'function') return value
      let fn = bound.get(key)
      if (fn === undefined) bound.set(key, (fn = (value as (...a: unknown[]) => unknown).bind(target)))
      return fn
    }
  })
}
