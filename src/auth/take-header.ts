import type { FastifyRequest } from 'fastify'

export const DUPLICATE = Symbol('several headers of one name')

// RFC 6750 section 2.1: the scheme is case-insensitive, the token is b64token.
export const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i
export const BEARER_SCHEME = /^bearer(?: |$)/i
// RFC 9449 section 7.1: the scheme is case-insensitive, the token is token68 like Bearer's.
export const DPOP = /^dpop +([A-Za-z0-9\-._~+/]+=*) *$/i
export const DPOP_SCHEME = /^dpop(?: |$)/i

/**
 * Read a credential header (`authorization`, `dpop`) and remove it from the request, so that
 * nothing downstream (a handler, a gateway's upstream request) can see or forward it. Several of
 * the name are {@link DUPLICATE}: Node keeps the first and drops the rest, and which one a proxy
 * saw is anyone's guess.
 */
export function takeHeader(request: FastifyRequest, name: string): string | typeof DUPLICATE | undefined {
  const raw = request.raw
  const value = raw.headers[name]
  if (value === undefined) return undefined
  delete raw.headers[name]
  const list = raw.rawHeaders
  let count = 0
  for (let i = list.length - 2; i >= 0; i -= 2) {
    if (list[i]!.toLowerCase() !== name) continue
    list.splice(i, 2)
    count++
  }
  if (count > 1) return DUPLICATE
  return value as string
}
