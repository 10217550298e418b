import { errors } from '../errors.js'
import { overlay } from '../store/compose.js'
import type { Store } from '../store/types.js'
import type { Logger } from '../core/request-context.js'
import type { McpServer } from '../core/mcp-server.js'
import type { Gateway } from './gateway.js'

/** A mount of the gateway: its server, its name among the mounts, and the upstream serving a URI. */
export interface MountOf {
  mcp: McpServer
  holder: string
  upstreamOf(uri: string): Gateway | undefined
}

/**
 * The store as a mount's routes see it: `resources/subscribe` also subscribes the upstream serving
 * the URI (once per URI), the mount's last `resources/unsubscribe` releases it (the upstream is
 * unsubscribed once no mount holds it), and the readiness ping (`GET /ready`) fails while a required
 * upstream of `all` is down. Everything else is the store's own. It also sets the mount server's
 * `resourceWatch`, so that listen streams subscribe the upstream the same way.
 */
export function gatewayStore(store: Store, mount: MountOf, all: readonly Gateway[], log: Logger): Store {
  const own = store.connections
  const { mcp, holder } = mount
  // The upstream stays subscribed while a connection (resources/subscribe) or a listen stream of
  // this process (resourceSubscriptions) wants the URI.
  const release = async (uri: string): Promise<void> => mount.upstreamOf(uri)?.unsubscribeUpstream(uri, (await own.subscribers(uri)).length + mcp.watching(uri), holder)
  const connections = overlay(own, {
    subscribe: async (owner: string, uri: string) => {
      await mount.upstreamOf(uri)?.subscribeUpstream(uri, holder)
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
  mcp.resourceWatch = {
    first: (uri) => void mount.upstreamOf(uri)?.subscribeUpstream(uri, holder).catch((err: unknown) => log.warn({ err, uri }, 'upstream subscribe failed')),
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
