import type { FastifyInstance } from 'fastify'
import { isCspOrigin, type UiCsp } from '../core/apps.js'
import { errors } from '../errors.js'

const KEYS = ['connectDomains', 'resourceDomains', 'frameDomains', 'baseUriDomains'] as const
/** More origins than any view needs; a longer list is cut here, not turned into a huge header. */
const MAX_ORIGINS = 32

/**
 * The origins of a view's `_meta.ui.csp` that this host allows: only what {@link isCspOrigin}
 * accepts (scheme, host, port), at most {@link MAX_ORIGINS} of each kind. Anything else is dropped,
 * so that a hostile server's "origin" never adds a keyword or a directive to the policy.
 */
export function allowedCsp(declared: unknown): Required<UiCsp> {
  const csp = (typeof declared === 'object' && declared !== null ? declared : {}) as Record<string, unknown>
  const pick = (list: unknown) => (Array.isArray(list) ? [...new Set(list.filter(isCspOrigin))].slice(0, MAX_ORIGINS) : [])
  return Object.fromEntries(KEYS.map((k) => [k, pick(csp[k])])) as Required<UiCsp>
}

/**
 * The Content-Security-Policy of a view, from SEP-1865's construction, stricter where it allows:
 * no `'self'` anywhere (the frame's own URL is this server's, whose API a view has no business
 * calling), `base-uri 'none'` unless origins are declared, nothing but the declared origins. Inline
 * script and style are allowed: a view is one HTML page, as the SEP's default policy says.
 */
export function viewPolicy(csp: Required<UiCsp>): string {
  const or = (list: string[], fallback: string) => (list.length === 0 ? fallback : list.join(' '))
  const res = csp.resourceDomains.join(' ')
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${res}`.trim(),
    `style-src 'unsafe-inline' ${res}`.trim(),
    `img-src data: ${res}`.trim(),
    `font-src ${or(csp.resourceDomains, "'none'")}`,
    `media-src data: ${res}`.trim(),
    `connect-src ${or(csp.connectDomains, "'none'")}`,
    `frame-src ${or(csp.frameDomains, "'none'")}`,
    `base-uri ${or(csp.baseUriDomains, "'none'")}`,
    "object-src 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
    // The frame's sandbox again, from the response itself: opened any other way (a link, a
    // window, a frame without the attribute), the page still runs in an opaque origin.
    'sandbox allow-scripts'
  ].join('; ')
}

/**
 * `GET /console/view?csp=<JSON>`: the frame the console shows an MCP App view in. The page is
 * fixed (console/view.html: it waits for the view's HTML from its parent); the policy is the view's,
 * built from `csp` (its `_meta.ui.csp`), because a document's policy is set when it loads. The
 * console frames it with `sandbox="allow-scripts"` only, so the view runs in an opaque origin: it
 * cannot reach the console's page, its storage or its token, and talks to it by postMessage alone.
 */
export function registerViewFrame(fastify: FastifyInstance, html: string): void {
  fastify.get('/console/view', { config: { mcpPublic: true }, schema: { hide: true } }, (request, reply) => {
    const raw = (request.query as Record<string, unknown>).csp
    let declared: unknown
    if (typeof raw === 'string') {
      if (raw.length > 16_384) throw errors.invalidParams('csp: longer than 16384 characters')
      try {
        declared = JSON.parse(raw)
      } catch {
        throw errors.invalidParams('csp: not JSON')
      }
    }
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', viewPolicy(allowedCsp(declared)))
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(html)
  })
}
