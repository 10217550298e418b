/**
 * `npm run dev` (and `mcp-pure-http dev`): a server restarted on every change, with readable logs.
 * `node --watch` restarts bin/dev-server.js when a module it loaded changes; with `build`, `tsc --watch`
 * (incremental) first turns a change of the TypeScript sources into those modules.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

export interface DevOptions {
  /** A server file (its default export: an `McpServer`, or a function returning one); default: the demo. */
  file?: string
  /** Also run `tsc --watch` on this project (this repository's `npm run dev`). */
  build?: boolean
  /** Environment of the server (HOST, PORT, LOG_LEVEL, ...); default: this process's. */
  env?: NodeJS.ProcessEnv
  /** The children's stdio (default inherit). */
  stdio?: StdioOptions
}

export interface Dev {
  /** The server process (restarted in place by node --watch). */
  readonly server: ChildProcess
  /** Stop the watchers and the server. */
  stop(): Promise<void>
}

/** Start the server under `node --watch` (and `tsc --watch` with `build`); Ctrl-C stops it all. */
export function dev(options: DevOptions = {}): Dev {
  const children: ChildProcess[] = []
  const { env = process.env, stdio = 'inherit' } = options
  if (options.build === true) {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
    children.push(spawn(process.execPath, [tsc, '-p', 'tsconfig.json', '--incremental', '--watch', '--preserveWatchOutput'], { stdio }))
  }
  const entry = fileURLToPath(new URL('dev-server.js', import.meta.url))
  const args = ['--watch', '--watch-preserve-output', entry, ...(options.file === undefined ? [] : [options.file])]
  const server = spawn(process.execPath, args, { stdio, env })
  children.push(server)
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return
        child.kill('SIGTERM')
        await once(child, 'exit')
      })
    )
  }
  return { server, stop }
}

async function main(argv: string[]): Promise<void> {
  const build = argv.includes('--build')
  const file = argv.find((a) => !a.startsWith('--'))
  const running = dev({ build, file })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void running.stop())
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) void main(process.argv.slice(2))
