import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/index.js'

export function createNotes(): McpServer {
  const mcp = new McpServer({ name: 'notes', version: '1.0.0', title: 'Notes' })
  const notes = new Map<string, string>()

  // `input` validates the arguments before the handler runs and types them ({ text: string });
  // `output` validates and types structuredContent. A thrown Error becomes a tool error (isError: true).
  mcp.tool(
    {
      name: 'add_note',
      description: 'Store a note and return its id.',
      input: Type.Object({ text: Type.String({ minLength: 1, maxLength: 10_000 }) }),
      output: Type.Object({ id: Type.String() })
    },
    ({ text }) => {
      const id = String(notes.size + 1)
      notes.set(id, text)
      return { structuredContent: { id } }
    }
  )

  // GET /resources/notes%3A%2F%2F1 reads one note; returning undefined answers 404.
  mcp.resourceTemplate({ uriTemplate: 'notes://{id}', name: 'note', mimeType: 'text/plain' }, (_uri, { id }) => notes.get(id!))
  return mcp
}
