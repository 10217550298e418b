/**
 * `npm run dev` (and `mcp-pure-http dev`): a server restarted on every change, with readable logs.
 * `node --watch` restarts bin/dev-server.js when a module it loaded changes. In this repository,
 * scripts/dev.mjs runs `tsc --watch` beside it, which turns a change of the sources into those modules.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath, pathToFileURL } from 'node:url'

export interface DevOptions {
  /** A server file (its default export: an `McpServer`, or a function returning one); default: the demo. */
  file?: string
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

/** Start the server under `node --watch`; Ctrl-C stops it. */
export function dev(options: DevOptions = {}): Dev {
  const { env = process.env, stdio = 'inherit' } = options
  const entry = fileURLToPath(new URL('dev-server.js', import.meta.url))
  const args = ['--watch', '--watch-preserve-output', entry, ...(options.file === undefined ? [] : [options.file])]
  const server = spawn(process.execPath, args, { stdio, env })
  const exited = once(server, 'exit')
  return {
    server,
    stop: async () => {
      server.kill('SIGTERM')
      await exited
    }
  }
}

/** `mcp-pure-http dev [file]` and `node dist/bin/dev.js [file]`: serve until SIGINT or SIGTERM. */
export async function main(argv: string[]): Promise<void> {
  const running = dev({ file: argv[0] })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void running.stop())
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) void main(process.argv.slice(2))
