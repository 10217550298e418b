import { existsSync } from 'node:fs'

// The script's table and search, from test/ (tsx) or from dist/test/ (`npm run conformance` compiles
// test/helpers/redis-server.ts, which imports this file): tsc does not copy scripts/prerequisites.mjs to dist/.
const beside = new URL('../../scripts/prerequisites.mjs', import.meta.url)
const { find, installCommand, PREREQUISITES }: typeof import('../../scripts/prerequisites.mjs') = await import(
  existsSync(beside) ? beside.href : new URL('../../../scripts/prerequisites.mjs', import.meta.url).href
)

export type Prerequisite = keyof typeof PREREQUISITES

/**
 * The path of a program the tests need, or an error of one line that says how to install it. `npm test`
 * installs them first (scripts/prerequisites.mjs); this check is for a file run alone with `npx tap`.
 * These tests never skip: a machine without the program fails them, loudly, and says what to do.
 * @example
 * const tmux = prerequisite('tmux')
 */
export function prerequisite(name: Prerequisite): string {
  const found = find(name)
  if (found === undefined) {
    throw new Error(`${name} is not installed: these tests need a real ${name}. \`npm test\` installs it, or run: ${installCommand([PREREQUISITES[name]])}`)
  }
  return found
}
