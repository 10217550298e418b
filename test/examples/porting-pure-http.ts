import { McpServer } from '../../src/index.js'
import { z } from 'zod'

export default function server(): McpServer {
  const server = new McpServer({ name: 'calc', version: '1.0.0' })
  server.tool(
    {
      name: 'add',
      title: 'Add',
      description: 'Add two numbers',
      input: z.object({ a: z.number(), b: z.number().default(0) }),
      output: z.object({ sum: z.number() })
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
      structuredContent: { sum: a + b }
    })
  )
  return server
}
