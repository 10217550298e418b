/**
 * The process `dev()` runs (and `node --watch` restarts): a server file's catalogue, or the demo's,
 * served with readable logs. Configuration comes from the environment, as for `npm start`.
 */
import closeWithGrace from 'close-with-grace'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { FastifyServerOptions } from 'fastify'
import { hostOriginFromConfig, loadConfig } from '../src/config.js'
import type { McpServer } from '../src/core/mcp-server.js'
import { createDemoServer } from '../src/demo/catalogue.js'
import { buildServer } from '../src/server.js'

/** What a server file exports by default: the `McpServer`, or a function that makes it. */
export type ServerModule = { default: McpServer | (() => McpServer | Promise<McpServer>) }

/** The catalogue of a server file (its default export), or the demo's when there is no file. */
export async function loadCatalogue(file: string | undefined): Promise<McpServer> {
  if (file === undefined) return createDemoServer()
  const loaded = ((await import(pathToFileURL(resolve(file)).href)) as Partial<ServerModule>).default
  const mcp = typeof loaded === 'function' ? await loaded() : loaded
  if (mcp === undefined || typeof (mcp as McpServer).tool !== 'function') {
    throw new Error(`${file}: its default export must be an McpServer, or a function that returns one`)
  }
  return mcp
}

/** pino-pretty when it is installed (a devDependency here; optional for a user), else JSON lines and a hint. */
async function prettyLogger(level: string): Promise<FastifyServerOptions['logger']> {
  try {
    const { build: pretty } = await import('pino-pretty')
    return { level, stream: pretty({ colorize: process.stdout.isTTY === true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' }) }
  } catch {
    process.stderr.write('dev: logs stay JSON lines; npm install --save-dev pino-pretty for readable ones\n')
    return { level }
  }
}

async function main(): Promise<void> {
  const config = loadConfig()
  const mcp = await loadCatalogue(process.argv[2])
  const app = await buildServer({ mcp, logger: await prettyLogger(config.LOG_LEVEL), ...hostOriginFromConfig(config) })
  // node --watch stops this process with SIGTERM before each restart (and Ctrl-C sends SIGINT):
  // close the server, its connections and its store, then exit, as `npm start` does.
  closeWithGrace({ delay: 2000 }, () => app.close())
  await app.listen({ host: config.HOST, port: config.PORT })
}

main().catch((err: unknown) => {
  process.stderr.write(`dev: ${(err as Error).message}\n`)
  // node --watch waits for the next change of a loaded file, then starts this again.
  process.exitCode = 1
})
