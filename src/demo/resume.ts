import { Type } from '@sinclair/typebox'
import type { McpServer } from '../core/mcp-server.js'
import { resumable } from '../mrtr/resume.js'

/** The demo's resumable work: a large resource read in parts, and a sum longer than one request may take. */
export function registerResumeDemos(mcp: McpServer): void {
  const LINES = 10_000
  const PAGE = 2_000
  mcp.resource(
    {
      uri: 'demo://numbers',
      name: 'numbers',
      title: 'Ten thousand lines',
      description: `${LINES} numbered lines, read ${PAGE} at a time: follow _meta.nextResumeToken.`,
      mimeType: 'text/plain'
    },
    (uri, ctx) => {
      const from = typeof ctx.resumed === 'number' ? ctx.resumed : 0
      const to = Math.min(from + PAGE, LINES)
      const text = Array.from({ length: to - from }, (_, i) => `line ${from + i + 1}`).join('\n')
      const part = { contents: [{ uri, mimeType: 'text/plain', text }] }
      return to < LINES ? resumable(part, to) : part
    }
  )

  mcp.tool(
    {
      name: 'long_sum',
      title: 'Long sum',
      description: 'Sums 1..n. When the work outlasts one request (maxRequestMs), it returns a part with _meta.nextResumeToken: repeat the call with _meta.resumeToken to go on.',
      input: Type.Object({ n: Type.Integer({ minimum: 1, maximum: 50_000_000 }) }),
      output: Type.Object({ sum: Type.Number() })
    },
    async ({ n }, ctx) => {
      const resumed = ctx.resumed as { i: number; sum: number } | undefined
      let i = resumed?.i ?? 0
      let sum = resumed?.sum ?? 0
      while (i < n) {
        const end = Math.min(i + 100_000, n)
        for (; i < end;) sum += ++i
        if (i < n && Date.now() >= ctx.deadline) {
          return resumable({ content: [{ type: 'text' as const, text: `Summed ${i} of ${n}; resume to go on.` }], structuredContent: { sum } }, { i, sum })
        }
        await new Promise((resolve) => setImmediate(resolve))
      }
      return { structuredContent: { sum } }
    }
  )
}
