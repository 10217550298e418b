import type { FastifyRequest, onRequestHookHandler } from 'fastify'
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
   * Browsers on these origins get CORS answers too (see the plugin's `cors` option).
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

/** The Host and Origin decisions of a server, shared by the check and CORS (src/plugins/cors.ts). */
export interface HostOriginPolicy {
  /**
   * The `onRequest` hook refusing requests whose `Host` or `Origin` is not allowed (403): a page on
   * another site that rebinds its own DNS name to 127.0.0.1 still sends its name as Host and its
   * origin as Origin. Undefined when there is nothing to check.
   */
  check: onRequestHookHandler | undefined
  /**
   * The origins (lower-cased) this request may come from, those the check applies (without a
   * request: those of requests from the network); undefined: any.
   */
  origins(request?: FastifyRequest): ReadonlySet<string> | undefined
}

/**
 * The Host and Origin policy of `options` for a server: two Set lookups a request that names a
 * listed host as listed. Throws when a given host is not a `host[:port]`.
 */
export function hostOriginPolicy(options: HostOriginOptions, server?: Server): HostOriginPolicy {
  const givenHosts = options.allowedHosts === undefined ? undefined : new Set(options.allowedHosts.map((h) => h.toLowerCase()))
  // A listed name is well-formed, so a Host equal to one passes without the pattern (most requests).
  for (const h of givenHosts ?? []) if (!HOST.test(h)) throw new ConfigurationError(`allowedHosts (MCP_ALLOWED_HOSTS): ${JSON.stringify(h)} is not a host[:port]`)
  const givenOrigins = options.allowedOrigins === undefined ? undefined : new Set(options.allowedOrigins.map((o) => o.toLowerCase()))
  const listening = givenHosts === undefined && options.loopbackByDefault === true && server !== undefined ? server : undefined
  if (givenHosts === undefined && givenOrigins === undefined && listening === undefined) return { check: undefined, origins: () => undefined }
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
  // The default guards the network: an in-process `inject()` has no socket to rebind. Given lists always apply.
  const byDefault = (request: FastifyRequest | undefined): boolean => {
    if (listening === undefined) return false
    if (!settled) settle()
    return request === undefined || request.raw.socket instanceof Socket
  }
  const origins = (request?: FastifyRequest): ReadonlySet<string> | undefined => (byDefault(request) ? givenOrigins ?? ownOrigins : givenOrigins)
  const check: onRequestHookHandler = (request, _reply, done) => {
    const hosts = byDefault(request) ? ownHosts : givenHosts
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
    if (origin === undefined || request.routeOptions.config.mcpAnyOrigin === true) return done()
    const allowed = origins(request)
    if (allowed !== undefined && !allowed.has(origin.toLowerCase())) {
      request.log.warn({ origin: origin.slice(0, 256) }, 'request refused: Origin not allowed')
      return done(errors.forbidden('Origin not allowed'))
    }
    done()
  }
  return { check, origins }
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
