import type { onRequestHookHandler } from 'fastify'
import { errors } from '../errors.js'

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
}

const PORT = /:\d+$/

/**
 * The `onRequest` hook refusing requests whose `Host` or `Origin` is not allowed: a page on another
 * site that rebinds its own DNS name to 127.0.0.1 still sends its name as Host and its origin as
 * Origin. Two Set lookups a request. Undefined when neither list is given.
 */
export function hostOriginCheck(options: HostOriginOptions): onRequestHookHandler | undefined {
  const hosts = options.allowedHosts === undefined ? undefined : new Set(options.allowedHosts.map((h) => h.toLowerCase()))
  const origins = options.allowedOrigins === undefined ? undefined : new Set(options.allowedOrigins.map((o) => o.toLowerCase()))
  if (hosts === undefined && origins === undefined) return undefined
  return (request, _reply, done) => {
    if (hosts !== undefined) {
      const host = (request.headers.host ?? '').toLowerCase()
      if (!hosts.has(host) && !hosts.has(host.replace(PORT, ''))) {
        request.log.warn({ host }, 'request refused: Host not allowed')
        return done(errors.forbidden('Host not allowed'))
      }
    }
    const origin = request.headers.origin
    if (origins !== undefined && origin !== undefined && !origins.has(origin.toLowerCase())) {
      request.log.warn({ origin }, 'request refused: Origin not allowed')
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
export function loopbackOnly(port: number): Required<HostOriginOptions> {
  const names = ['127.0.0.1', 'localhost', '[::1]']
  const hosts = port === 0 ? names : names.flatMap((n) => (port === 80 ? [`${n}:80`, n] : [`${n}:${port}`]))
  const origins = port === 0 ? [] : hosts.map((h) => `http://${h}`)
  return { allowedHosts: hosts, allowedOrigins: origins }
}
