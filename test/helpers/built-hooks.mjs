// The module hooks of test/helpers/built.mjs: a library module's .ts source becomes its compiled .js
// in dist/, and that file is loaded as tsc wrote it. Each hook twice: asynchronous for
// module.register (Node 20), synchronous for module.registerHooks (Node 22 and later; see built.mjs).
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'

const ROOT = new URL('../../', import.meta.url).href
const DIST = `${ROOT}dist/`
const LIBRARY = /^(src|routes|bin|bench)\/.+(?<!\.d)\.ts$/

/** Where a resolved library source is loaded from instead: its compiled file; undefined for anything else. */
function compiled(resolved) {
  const path = resolved.url.startsWith(ROOT) ? resolved.url.slice(ROOT.length) : undefined
  if (path === undefined || !LIBRARY.test(path)) return undefined
  return { url: `${DIST}${path.slice(0, -3)}.js`, format: 'module', shortCircuit: true }
}

// Not through tsx's load hook, which rewrites every dynamic import() of a .js file (an interop
// `.then()` for CommonJS, which our ES modules do not need) and replaces tsc's source map with its
// own, of the compiled file: coverage of such a file (src/gateway/sdk.ts, src/store/memory.ts, ...)
// was then reported at dist/, with branches of the added code no test can take. Loaded as tsc wrote
// it, a test process runs the same code as the servers and CLIs the tests start.
const ours = (url) => url.startsWith(DIST) && url.endsWith('.js')

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  return compiled(resolved) ?? resolved
}

export async function load(url, context, next) {
  if (!ours(url)) return next(url, context)
  return { format: 'module', source: await readFile(new URL(url)), shortCircuit: true }
}

export function resolveSync(specifier, context, next) {
  const resolved = next(specifier, context)
  return compiled(resolved) ?? resolved
}

export function loadSync(url, context, next) {
  if (!ours(url)) return next(url, context)
  return { format: 'module', source: readFileSync(new URL(url)), shortCircuit: true }
}
