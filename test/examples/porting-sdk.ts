import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'

export default function server(): McpServer {
  const server = new McpServer({ name: 'calc', version: '1.0.0' })
  server.registerTool(
    'add',
    {
      title: 'Add',
      description: 'Add two numbers',
      inputSchema: { a: z.number(), b: z.number().default(0) },
      outputSchema: { sum: z.number() }
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
      structuredContent: { sum: a + b }
    })
  )
  return server
}
