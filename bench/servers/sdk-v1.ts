import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import * as z from 'zod/v4'
import { benchTools, fillerAnswer, port, toolCount } from '../catalogue.js'

/**
 * The official SDK v1 (`@modelcontextprotocol/sdk`), stateless Streamable HTTP exactly as its
 * docs' `simpleStatelessStreamableHttp` example: a new server and transport for every request,
 * here with `enableJsonResponse` so answers are JSON, not SSE.
 */
const tools = benchTools(toolCount())

function getServer(): McpServer {
  const server = new McpServer({ name: 'bench-sdk-v1', version: '1.0.0' })
  for (const { name, title, description, annotations } of tools) {
    if (name === 'echo') {
      server.registerTool(
        name,
        { title, description, annotations, inputSchema: { text: z.string().max(100_000).describe('The text to echo.') } },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
      )
    } else {
      server.registerTool(
        name,
        {
          title,
          description,
          annotations,
          inputSchema: {
            query: z.string().min(1).max(200).describe('Words to look for.'),
            limit: z.number().int().min(1).max(100).optional().describe('Most records to return.')
          }
        },
        async ({ query }) => ({ content: [{ type: 'text', text: fillerAnswer(name, query) }] })
      )
    }
  }
  return server
}

const app = createMcpExpressApp()
// Express's own types are not installed: the handler needs only Node's request (with the parsed body).
app.post('/mcp', async (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => {
  const server = getServer()
  try {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    await server.connect(transport)
    await transport.handleRequest(req, res, req.body)
    res.on('close', () => {
      void transport.close()
      void server.close()
    })
  } catch {
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }))
    }
  }
})

const listener = app.listen(port(), '127.0.0.1')
process.once('SIGTERM', () => listener.close(() => process.exit(0)))
