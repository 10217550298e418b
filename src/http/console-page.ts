import { existsSync, readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { registerViewFrame } from './app-view.js'
import { CONSOLE_CSP, escapeHtml, securePage } from './page-security.js'

/** The page's files, as the browser gets them (console/ at the package's root: plain HTML, ES modules, CSS). */
const ASSETS: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'http.js': 'text/javascript; charset=utf-8',
  'schema-form.js': 'text/javascript; charset=utf-8',
  'rounds.js': 'text/javascript; charset=utf-8',
  'dom.js': 'text/javascript; charset=utf-8',
  'apps.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8'
}

/**
 * Where console/ is: beside dist/ in the package and in a checkout (this module runs from
 * dist/src/http), or two levels up when a test loads the TypeScript source itself.
 */
function assetsDir(): URL {
  const candidates = [new URL('../../../console/', import.meta.url), new URL('../../console/', import.meta.url)]
  const found = candidates.find((dir) => existsSync(new URL('index.html', dir)))
  /* c8 ignore next */
  if (found === undefined) throw new Error('console/ is missing from the package')
  return found
}

let files: Map<string, string> | undefined
/** Read once, on the first registration: a handful of small files, never changed while running. */
function load(): Map<string, string> {
  if (files !== undefined) return files
  const dir = assetsDir()
  files = new Map(['index.html', 'view.html', ...Object.keys(ASSETS)].map((name) => [name, readFileSync(new URL(name, dir), 'utf8')]))
  return files
}

/**
 * `GET /console`: a page that runs the whole protocol over the Pure HTTP routes of this server
 * (or of a gateway's mount, under its prefix): lists, a form from each input schema, calls with
 * their progress, `input_required` rounds answered in forms, tasks followed and cancelled,
 * notifications. No build step and no other host: the files in console/ as they are. The shell is
 * public like /docs (a page that needs a token to load could not ask for one); every call it makes
 * goes through the ordinary routes and their authentication. Nothing from the server is in the
 * HTML: the page shows what the API answers as text (`textContent`), under the strict page policy;
 * an MCP App view runs apart, in a sandboxed frame of its own (see registerViewFrame).
 */
export async function registerConsolePage(fastify: FastifyInstance): Promise<void> {
  const assets = load()
  // The prefix is configuration, not a server's words; escaped all the same.
  const html = assets.get('index.html')!.replaceAll('%PREFIX%', escapeHtml(fastify.prefix))
  // The frame of an MCP App view: its own policy (the view's), so outside the page's context.
  await fastify.register(async (frame) => registerViewFrame(frame, assets.get('view.html')!))
  await fastify.register(async (page) => {
    securePage(page, CONSOLE_CSP)
    const options = { config: { mcpPublic: true }, schema: { hide: true } }
    page.get('/console', options, (_request, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html))
    for (const [name, type] of Object.entries(ASSETS)) {
      page.get(`/console/${name}`, options, (_request, reply) => reply.type(type).header('cache-control', 'no-cache').send(assets.get(name)))
    }
  })
}
