import { errors } from '../errors.js'
import { overlay } from '../store/compose.js'
import type { Store } from '../store/types.js'
import type { Logger } from '../core/request-context.js'
import type { Gateway } from './gateway.js'

/**
 * The store as a gateway's routes see it: `resources/subscribe` also subscribes the upstream (once
 * per URI), the last `resources/unsubscribe` unsubscribes it, and the readiness ping (`GET /ready`)
 * fails while a required upstream of `all` is down. Everything else is the store's own. It also
 * sets the gateway's `resourceWatch`, so that listen streams subscribe the upstream the same way.
 */
export function gatewayStore(store: Store, gw: Gateway, all: readonly Gateway[], log: Logger): Store {
  const own = store.connections
  // The upstream stays subscribed while a connection (resources/subscribe) or a listen stream of
  // this process (resourceSubscriptions) wants the URI.
  const release = async (uri: string): Promise<void> => gw.unsubscribeUpstream(uri, (await own.subscribers(uri)).length + gw.mcp.watching(uri))
  const connections = overlay(own, {
    subscribe: async (owner: string, uri: string) => {
      await gw.subscribeUpstream(uri)
      return own.subscribe(owner, uri)
    },
    unsubscribe: async (owner: string, uri: string) => {
      const was = await own.unsubscribe(owner, uri)
      await release(uri)
      return was
    }
  })
  // A subscriptions/listen stream's resourceSubscriptions subscribe the upstream too (the stream is
  // this process's: so is the upstream connection that must send the updates).
  gw.mcp.resourceWatch = {
    first: (uri) => void gw.subscribeUpstream(uri).catch((err: unknown) => log.warn({ err, uri }, 'upstream subscribe failed')),
    last: (uri) => void release(uri).catch((err: unknown) => log.warn({ err, uri }, 'upstream unsubscribe failed'))
  }
  return overlay(store, { connections, ping: () => ping(store, all) })
}

/** Readiness: the store answers, and every required upstream is up. */
async function ping(store: Store, all: readonly Gateway[]): Promise<void> {
  await store.ping()
  const down = all.find((g) => g.required && g.upstream.state !== 'up')
  if (down === undefined) return
  const { name, state, lastError } = down.upstream
  throw errors.upstreamDown(`the upstream server ${name} is ${state}: ${lastError}`, 5)
}
