// Files of the test tools (test/tools/package.json, installed by scripts/test-tools.mjs) that tests run
// as programs: the third-party MCP servers behind the gateway, and redocly's command.
import { fileURLToPath } from 'node:url'

const modules = (path: string): string => fileURLToPath(new URL(`node_modules/${path}`, import.meta.url))

export const EVERYTHING = modules('@modelcontextprotocol/server-everything/dist/index.js')
export const FILESYSTEM = modules('@modelcontextprotocol/server-filesystem/dist/index.js')
export const REDOCLY = modules('.bin/redocly')
export const MEMORY = modules('@modelcontextprotocol/server-memory/dist/index.js')
export const SEQUENTIAL_THINKING = modules('@modelcontextprotocol/server-sequential-thinking/dist/index.js')
export const DESKTOP_COMMANDER = modules('@wonderwhy-er/desktop-commander/dist/index.js')
export const CODE_RUNNER = modules('mcp-server-code-runner/dist/cli.js')
