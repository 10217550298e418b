import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, reservePort } from '../../bench/lib/ports.js'
import { prerequisite } from './prerequisites.js'

// Ports for the servers tests start: chosen where no other process's port-0 bind can take them
// meanwhile (bench/lib/ports.ts says why).
export { freePort, reservePort }

export interface RedisServer {
  url: string
  port: number
  process: ChildProcess
  /** Its data directory (the append-only file, with `persist`). */
  dir: string
  stop(): Promise<void>
}

export interface RedisOptions {
  /** Every write in an append-only file, synced before it is answered: a `kill -9` loses nothing. */
  persist?: boolean
  /** Start again where a killed one was (its port and directory: `persist` brings its data back). */
  after?: RedisServer
  /** On this port (one the caller held until now). */
  port?: number
}

/** A throw-away redis-server on a free loopback port: no persistence unless asked, its own temp dir. */
export async function startRedis(options: RedisOptions = {}): Promise<RedisServer> {
  const bin = prerequisite('redis-server')
  const port = options.after?.port ?? options.port ?? (await freePort())
  const dir = options.after?.dir ?? mkdtempSync(join(tmpdir(), 'mcp-redis-'))
  const aof = options.persist === true ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...aof, '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start within 10 s:\n${out}`)), 10_000)
    child.stdout!.on('data', (d: Buffer) => {
      out += String(d)
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`redis-server exited with ${code}:\n${out}`))
    })
  })
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    dir,
    async stop() {
      // A process killed by a signal has no exit code, only a signal code: it is gone all the same.
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        await once(child, 'exit')
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
