import { z } from 'zod'
import { McpServer } from '../../src/index.js'

export function createNotes(): McpServer {
  const mcp = new McpServer({ name: 'notes', version: '1.0.0', title: 'Notes' })
  const notes = new Map<string, string>()

  // The same tool with zod 4: the handler's arguments and structuredContent are typed from it too.
  mcp.tool(
    {
      name: 'add_note',
      description: 'Store a note and return its id.',
      input: z.object({ text: z.string().min(1).max(10_000) }),
      output: z.object({ id: z.string() })
    },
    ({ text }) => {
      const id = String(notes.size + 1)
      notes.set(id, text)
      return { structuredContent: { id } }
    }
  )

  mcp.resourceTemplate({ uriTemplate: 'notes://{id}', name: 'note', mimeType: 'text/plain' }, (_uri, { id }) => notes.get(id!))
  return mcp
}
