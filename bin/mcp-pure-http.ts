#!/usr/bin/env node
import { failed, main } from '../src/main.js'
import { USAGE, parseGatewayArgs } from '../src/gateway/options.js'

/** `mcp-pure-http demo`, `dev [file]` and `gateway ...`: servers, configured by HOST, PORT and MCP_*. */
const [command, ...rest] = process.argv.slice(2)
if (command === 'demo') {
  main().catch(failed)
} else if (command === 'gateway') {
  // The gateway loads the MCP SDK (an optional peer dependency) only when it is asked for.
  Promise.resolve()
    .then(() => parseGatewayArgs(rest))
    .then(async (args) => (await import('../src/gateway/serve.js')).serveGateway(args, args.configFile === undefined ? undefined : () => parseGatewayArgs(rest)))
    .catch(failed)
} else if (command === 'dev') {
  import('./dev.js').then((m) => m.main(rest)).catch(failed)
} else {
  console.error(USAGE)
  process.exit(command === '-h' || command === '--help' ? 0 : 2)
}
