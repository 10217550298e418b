import { ConfigurationError } from '../errors.js'
import type { Store, StoreCompanions } from './types.js'

/**
 * `target` with some of its members replaced (a store's roles or readiness, a role's methods), the
 * rest its own: how webhooks take the mailbox, a gateway the connections' subscriptions, without a
 * facade that forwards every other method. The target's own methods run on the target itself
 * (private fields stay reachable), and `instanceof` sees through.
 * @example
 * mcp.store = overlay(mcp.store, { mailbox: overlay(mcp.store.mailbox, { pushNotification }) })
 */
export function overlay<T extends object>(target: T, overrides: Partial<T>): T {
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(target, {
    get(t, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof T]
      const value: unknown = Reflect.get(t, key, t)
      if (typeof value !== 'function') return value
      let fn = bound.get(key)
      if (fn === undefined) bound.set(key, (fn = (value as (...a: unknown[]) => unknown).bind(t)))
      return fn
    }
  })
}

/**
 * A store's companion for `feature`, made now; a store without it (a backend that does not provide
 * it) is a {@link ConfigurationError} at start, never a silent fallback to this process' memory.
 * @example
 * const webhookStore = await companion(mcp.store, 'webhooks', 'Webhooks')
 */
export async function companion<K extends keyof StoreCompanions>(
  store: Store,
  name: K,
  feature: string
): Promise<Awaited<ReturnType<NonNullable<StoreCompanions[K]>>>> {
  const make = store.companions[name] as (() => Promise<Awaited<ReturnType<NonNullable<StoreCompanions[K]>>>>) | undefined
  if (make === undefined) {
    throw new ConfigurationError(
      `${feature} needs the store's "${name}" companion, which this store (${store.constructor.name}) does not provide: see docs/backends.md`
    )
  }
  return make.call(store.companions)
}
