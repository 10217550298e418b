import { Type, type TObject } from '@sinclair/typebox'

/**
 * The bench catalogue, shared by every server so they list and call the same tools: `echo` plus
 * filler tools shaped like real ones (a description, two typed arguments, annotations). Plain data,
 * so bare Fastify and the SDK servers can use it without this project's library.
 */
export interface BenchTool {
  name: string
  title: string
  description: string
  input: TObject
  annotations: { readOnlyHint: boolean; idempotentHint: boolean; openWorldHint: boolean }
}

const ANNOTATIONS = { readOnlyHint: true, idempotentHint: true, openWorldHint: false }

export const ECHO: BenchTool = {
  name: 'echo',
  title: 'Echo',
  description: 'Returns the text it is given.',
  input: Type.Object({ text: Type.String({ description: 'The text to echo.', maxLength: 100_000 }) }),
  annotations: ANNOTATIONS
}

/** `echo` and `count - 1` filler tools, `tool_0001`... */
export function benchTools(count: number): BenchTool[] {
  const tools = [ECHO]
  for (let i = 1; i < count; i++) {
    const id = String(i).padStart(4, '0')
    tools.push({
      name: `tool_${id}`,
      title: `Tool ${id}`,
      description: `Searches collection ${id} and returns the matching records, newest first.`,
      input: Type.Object({
        query: Type.String({ description: 'Words to look for.', minLength: 1, maxLength: 200 }),
        limit: Type.Optional(Type.Integer({ description: 'Most records to return.', minimum: 1, maximum: 100 }))
      }),
      annotations: ANNOTATIONS
    })
  }
  return tools
}

/** What every filler tool answers. */
export const fillerAnswer = (name: string, query: string) => `${name}: no records match "${query}".`

/** A queued server-to-client notification: a log message, as `ctx.sendLog` queues them. */
export const benchNotification = (i: number) => ({
  method: 'notifications/message',
  params: { level: 'info', logger: 'bench', data: `Indexed batch ${i} of the nightly import: 500 records.` }
})

/** How many notifications a server process queues for its connection at start: `NOTIFICATIONS`. */
export const notificationCount = (): number => Number(process.env.NOTIFICATIONS ?? 0)

/** How many tools a server process registers: `TOOLS` in its environment (default 1, echo alone). */
export const toolCount = (): number => Number(process.env.TOOLS ?? 1)

/** The port a server listens on: `PORT`, chosen by the runner. */
export const port = (): number => Number(process.env.PORT)

/**
 * How many logical connections a server process serves: `CONNECTIONS` (default 0: one anonymous
 * connection). With them, the query parameter `c` names the caller's connection, a stand-in for the
 * principal a bearer token would name (h2load varies only the URI of its requests, not headers).
 */
export const connectionCount = (): number => Number(process.env.CONNECTIONS ?? 0)

/** The principal id of bench connection `c`. */
export const connectionId = (c: string): string => `bench:${c}`
