import { errors } from '../errors.js'
import type { Store } from '../store/types.js'
import type { Gateway } from './gateway.js'

/**
 * The store as a gateway's routes see it: `resources/subscribe` also subscribes the upstream (once
 * per URI), the last `resources/unsubscribe` unsubscribes it, and the readiness ping (`GET /ready`)
 * fails while a required upstream of `all` is down. Everything else is the store itself.
 */
export function gatewayStore(store: Store, gw: Gateway, all: readonly Gateway[]): Store {
  return new Proxy(store, {
    get: (target, key) => {
      if (key === 'subscribe') {
        return async (owner: string, uri: string) => {
          await gw.subscribeUpstream(uri)
          return target.subscribe(owner, uri)
        }
      }
      if (key === 'unsubscribe') {
        return async (owner: string, uri: string) => {
          const was = await target.unsubscribe(owner, uri)
          await gw.unsubscribeUpstream(uri, (await target.subscribers(uri)).length)
          return was
        }
      }
      if (key === 'ping') return () => ping(target, all)
      const value = Reflect.get(target, key, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
}

/** Readiness: the store answers, and every required upstream is up. */
async function ping(store: Store, all: readonly Gateway[]): Promise<void> {
  await store.ping()
  const down = all.find((g) => g.required && g.upstream.state !== 'up')
  if (down !== undefined) throw errors.upstreamDown(`An upstream server is ${down.upstream.state}`, 5)
}
