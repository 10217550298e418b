import { spawnSync } from 'node:child_process'

/** The programs the tests run for real, and the Debian package that installs each. */
const PACKAGES = { tmux: 'tmux', 'redis-server': 'redis-server', nginx: 'nginx' } as const
export type Prerequisite = keyof typeof PACKAGES

/**
 * The path of a program the tests need, or an error of one line that says how to install it. These
 * tests never skip: a machine without the program fails them, loudly, and says what to do.
 * @example
 * const tmux = prerequisite('tmux')
 */
export function prerequisite(name: Prerequisite): string {
  // `command -v` finds it on PATH; nginx and redis-server often live in /usr/sbin, off a user's PATH.
  const found = spawnSync('/bin/sh', ['-c', `command -v ${name} || ls /usr/sbin/${name} 2>/dev/null`], { encoding: 'utf8' }).stdout.trim().split('\n')[0]
  if (found === undefined || found === '') {
    throw new Error(`${name} is not installed: these tests need a real ${name}. Install it with: apt-get update && apt-get install -y ${PACKAGES[name]}`)
  }
  return found
}
