import { execFile, execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { prerequisite } from './prerequisites.js'

/** The compiled CLI (`npm test` builds first). */
export const cli = fileURLToPath(new URL('../../dist/bin/mcp-http.js', import.meta.url))

/** Run the compiled CLI without a terminal: stdin closed, output captured. */
export function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [cli, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : (err as { code: number }).code, stdout, stderr })
    )
    child.stdin?.end()
  })
}

let sessions = 0

/** A tmux server of this test's own; `start` runs a command in a new window, `wait` polls its screen. */
export function tmux(t: Test) {
  prerequisite('tmux')
  const socket = `mcp-cli-${process.pid}-${++sessions}`
  const cmd = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' })
  t.teardown(() => {
    try {
      cmd('kill-server')
    } catch {
      // already gone
    }
  })
  return {
    start: (name: string, args: string) => cmd('new-session', '-d', '-s', name, '-x', '160', '-y', '40', `${process.execPath} ${cli} ${args}; echo EXIT=$?; sleep 60`),
    keys: (name: string, ...keys: string[]) => cmd('send-keys', '-t', name, ...keys),
    wait: async (name: string, pattern: RegExp) => {
      let shot = ''
      for (let i = 0; i < 800 && !pattern.test(shot); i++) {
        await sleep(25)
        shot = cmd('capture-pane', '-p', '-t', name)
      }
      return shot
    }
  }
}
