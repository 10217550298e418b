import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import type { Test } from 'tap'
import { GATEWAY_BIN } from './gateway-helper.js'
import { freePort } from './redis-server.js'

export interface Running {
  base: string
  child: ChildProcess
  log: () => string
}

/** `mcp-pure-http <args>` on a free port, until the test ends (SIGTERM, as an orchestrator stops it). */
export async function start(t: Test, args: string[], env: Record<string, string> = {}): Promise<Running> {
  const port = await freePort()
  const child = spawn(process.execPath, [GATEWAY_BIN, ...args], {
    env: { ...process.env, PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  child.stderr!.on('data', (d: Buffer) => (out += String(d)))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  })
  const base = `http://127.0.0.1:${port}`
  // Up to a minute: the gateway starts its upstream children and fetches their lists before it
  // listens, on a machine shared with other test files.
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`)
    if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) break
    if (i === 600) throw new Error(`not healthy within a minute: ${out}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { base, child, log: () => out }
}

export const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))

/** Whether a process id is alive. */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The process ids whose parent is `pid`. */
export async function spawnSyncChildren(pid: number): Promise<number[]> {
  const ps = spawn('ps', ['-o', 'pid=', '--ppid', String(pid)])
  let out = ''
  ps.stdout.on('data', (d: Buffer) => (out += String(d)))
  await once(ps, 'exit')
  return out.split('\n').map((s) => Number(s.trim())).filter((n) => n > 0)
}
