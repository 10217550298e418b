import type { FastifyInstance } from 'fastify'

/**
 * The Content-Security-Policy of every HTML page this server serves (`/docs` today). A page is on
 * the API's own origin, so a script injected into it (a hostile upstream's name, a description) could
 * call the API with the page's credentials, past the Host and Origin checks: the policy lets only
 * the server's own script files run. Nothing inline: Swagger UI's index loads its initializer as a
 * file and sets styles through the CSSOM (`element.style`), which `style-src` does not govern, so
 * `'unsafe-inline'` is needed for neither. `data:` images: Swagger UI's stylesheet and logo are
 * data URIs. `form-action 'none'`: the page's forms are handled by script; should one ever submit
 * for real, a token typed into it must not land in a URL.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'"
].join('; ')

/**
 * The console's policy: {@link PAGE_CSP}, and frames of this server only: the MCP App views it shows
 * (`/console/view`). Frame navigations are checked against this policy, whoever starts them, so a
 * view cannot take its frame, and what it was given, to another site.
 */
export const CONSOLE_CSP = `${PAGE_CSP}; frame-src 'self'`

/**
 * Send {@link PAGE_CSP} (or `policy`) and its companions on every response of `fastify` (an encapsulated context
 * that serves a page and its assets): `nosniff`, so no asset is ever taken for a script or page of
 * another type; no Referer, so a page's URL never leaves with a request. Call it once in the plugin
 * of each page.
 * @example
 * await app.register(async (page) => {
 *   securePage(page)
 *   page.get('/console', (_request, reply) => reply.type('text/html').send(html))
 * })
 */
export function securePage(fastify: FastifyInstance, policy = PAGE_CSP): void {
  fastify.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('content-security-policy', policy)
    reply.header('x-content-type-options', 'nosniff')
    reply.header('referrer-policy', 'no-referrer')
    done(null, payload)
  })
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text made safe inside HTML text and quoted attribute values (anything from a server or upstream). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!)
}
