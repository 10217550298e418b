// The resolve hook of test/helpers/built.mjs: a library module's .ts source becomes its compiled .js in dist/.
const ROOT = new URL('../../', import.meta.url).href
const LIBRARY = /^(src|routes|bin|bench)\/.+(?<!\.d)\.ts$/

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  const path = resolved.url.startsWith(ROOT) ? resolved.url.slice(ROOT.length) : undefined
  if (path === undefined || !LIBRARY.test(path)) return resolved
  return { url: `${ROOT}dist/${path.slice(0, -3)}.js`, format: 'module', shortCircuit: true }
}
