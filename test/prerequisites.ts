import { find, installCommand, PREREQUISITES } from '../scripts/prerequisites.mjs'

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
