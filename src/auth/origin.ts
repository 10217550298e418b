import type { onRequestHookHandler } from 'fastify'
import { Socket, type Server } from 'node:net'
import { ConfigurationError, errors } from '../errors.js'

/** Which `Host` and `Origin` values a server answers (protection against DNS rebinding). */
export interface HostOriginOptions {
  /**
   * Accepted `Host` headers, as `name:port` (that port only) or `name` (any port), compared without
   * case. A request with another Host is refused with 403. Default: any Host.
   */
  allowedHosts?: readonly string[]
  /**
   * Accepted `Origin` headers (`scheme://host[:port]`, or `null`). A request that sends another Origin
   * is refused with 403; requests without one (non-browser clients) pass. Default: any Origin.
   */
  allowedOrigins?: readonly string[]
  /**
   * With no `allowedHosts`: once the server listens on a loopback address, accept only its loopback
   * names on its port (what {@link loopbackOnly} lists); on any other address, any Host. `buildServer`
   * sets it; `inject()` requests, which come from the process itself, are not checked.
   */
  loopbackByDefault?: boolean
}

// A Host header is `name[:port]` or `[IPv6][:port]`: anything else (`a:1:1`, spaces, userinfo) is refused.
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9._~!$&'()*+,;=%-]*)(?::(\d{1,5}))?$/

/**
 * The `onRequest` hook refusing requests whose `Host` or `Origin` is not allowed: a page on another
 * site that rebinds its own DNS name to 127.0.0.1 still sends its name as Host and its origin as
 * Origin. Two Set lookups a request that names a listed host as listed. Undefined when there is
 * nothing to check; throws when a given host is not a `host[:port]`.
 */
export function hostOriginCheck(options: HostOriginOptions, server?: Server): onRequestHookHandler | undefined {
  const givenHosts = options.allowedHosts === undefined ? undefined : new Set(options.allowedHosts.map((h) => h.toLowerCase()))
  // A listed name is well-formed, so a Host equal to one passes without the pattern (most requests).
  for (const h of givenHosts ?? []) if (!HOST.test(h)) throw new ConfigurationError(`allowedHosts (MCP_ALLOWED_HOSTS): ${JSON.stringify(h)} is not a host[:port]`)
  const givenOrigins = options.allowedOrigins === undefined ? undefined : new Set(options.allowedOrigins.map((o) => o.toLowerCase()))
  const listening = givenHosts === undefined && options.loopbackByDefault === true && server !== undefined ? server : undefined
  if (givenHosts === undefined && givenOrigins === undefined && listening === undefined) return undefined
  // The loopback default, settled on the first request after listen(): its names on the bound port.
  let settled = listening === undefined
  let ownHosts: Set<string> | undefined
  let ownOrigins: Set<string> | undefined
  const settle = (): void => {
    const address = listening!.address()
    if (address === null || typeof address === 'string') return
    settled = true
    if (!isLoopbackHost(address.address)) return
    const own = loopbackOnly(address.port)
    ownHosts = new Set(own.allowedHosts)
    ownOrigins = new Set(own.allowedOrigins)
  }
  return (request, _reply, done) => {
    let hosts = givenHosts
    let origins = givenOrigins
    if (listening !== undefined) {
      if (!settled) settle()
      // The default guards the network: an in-process `inject()` has no socket to rebind. Given lists always apply.
      if (request.raw.socket instanceof Socket) {
        hosts = ownHosts
        origins ??= ownOrigins
      }
    }
    const raw = request.headers.host
    if (hosts !== undefined && (raw === undefined || !hosts.has(raw))) {
      const host = (raw ?? '').toLowerCase()
      const m = HOST.exec(host)
      if (m === null || (!hosts.has(host) && !hosts.has(m[1]!))) {
        request.log.warn({ host: host.slice(0, 256) }, 'request refused: Host not allowed')
        return done(errors.forbidden('Host not allowed'))
      }
    }
    const origin = request.headers.origin
    if (origins !== undefined && origin !== undefined && !origins.has(origin.toLowerCase())) {
      request.log.warn({ origin: origin.slice(0, 256) }, 'request refused: Origin not allowed')
      return done(errors.forbidden('Origin not allowed'))
    }
    done()
  }
}

/** True for `localhost`, `127.0.0.0/8` and `::1` (with or without brackets). */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase()
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(h)
}

/**
 * The Host and Origin lists of a server bound to a loopback address on `port`: its loopback names
 * only. Port 0 (chosen at listen time) accepts those names on any port.
 * @example
 * buildServer({ mcp, ...loopbackOnly(3000) })
 */
export function loopbackOnly(port: number): Required<Pick<HostOriginOptions, 'allowedHosts' | 'allowedOrigins'>> {
  const names = ['127.0.0.1', 'localhost', '[::1]']
  const hosts = port === 0 ? names : names.flatMap((n) => (port === 80 ? [`${n}:80`, n] : [`${n}:${port}`]))
  const origins = port === 0 ? [] : hosts.map((h) => `http://${h}`)
  return { allowedHosts: hosts, allowedOrigins: origins }
}
