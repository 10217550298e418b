import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import * as z from 'zod/v4'
import { ECHO } from '../catalogue.js'

/**
 * The upstream of the gateway phase: the official SDK v1's `echo` (as in sdk-v1.ts) over stdio, one
 * server for the life of the process, as a stdio MCP server runs.
 */
const server = new McpServer({ name: 'bench-sdk-v1-stdio', version: '1.0.0' })
const { name, title, description, annotations } = ECHO
server.registerTool(
  name,
  { title, description, annotations, inputSchema: { text: z.string().max(100_000).describe('The text to echo.') } },
  async ({ text }) => ({ content: [{ type: 'text', text }] })
)
await server.connect(new StdioServerTransport())
