import { createMcpFastifyApp } from '@modelcontextprotocol/fastify'
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node'
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server'
import * as z from 'zod'
import { benchTools, fillerAnswer, port, toolCount } from '../catalogue.js'

/**
 * The official SDK v2 (`@modelcontextprotocol/server`) on its Fastify adapter, two ways:
 * - `POST /mcp`: the adapter README's stateless Streamable HTTP pattern, a new server and
 *   transport per request (`sessionIdGenerator: undefined`, `enableJsonResponse: true`);
 * - `POST /mcp-modern`: v2's own serving entry, `createMcpHandler` (2026-07-28 requests carry
 *   their `_meta` envelope; still one server from the factory per request) in JSON mode.
 */
const tools = benchTools(toolCount())

function getServer(): McpServer {
  const server = new McpServer({ name: 'bench-sdk-v2', version: '1.0.0' })
  for (const { name, title, description, annotations } of tools) {
    if (name === 'echo') {
      server.registerTool(
        name,
        { title, description, annotations, inputSchema: z.object({ text: z.string().max(100_000).describe('The text to echo.') }) },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
      )
    } else {
      server.registerTool(
        name,
        {
          title,
          description,
          annotations,
          inputSchema: z.object({
            query: z.string().min(1).max(200).describe('Words to look for.'),
            limit: z.number().int().min(1).max(100).optional().describe('Most records to return.')
          })
        },
        async ({ query }) => ({ content: [{ type: 'text', text: fillerAnswer(name, query) }] })
      )
    }
  }
  return server
}

const app = createMcpFastifyApp()

app.post('/mcp', async (request, reply) => {
  const server = getServer()
  const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  await server.connect(transport)
  reply.raw.on('close', () => {
    void transport.close()
    void server.close()
  })
  await transport.handleRequest(request.raw, reply.raw, request.body)
  return reply
})

const modern = toNodeHandler(createMcpHandler(getServer, { responseMode: 'json', legacy: 'reject' }))
app.post('/mcp-modern', async (request, reply) => {
  await modern(request.raw, reply.raw, request.body)
  return reply
})

await app.listen({ host: '127.0.0.1', port: port() })
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
