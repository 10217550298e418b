import { Type } from '@sinclair/typebox'
import type { McpServer } from '../core/mcp-server.js'
import { elicit, listRoots } from '../mrtr/questions.js'
import { resolver } from '../mrtr/resolvers.js'

/**
 * The demo's tools, prompt and resource that ask their user (multi round-trip requests, SEP-2322).
 * Every round is independent: the answers so far travel in the sealed requestState.
 */
export function registerAskingDemos(mcp: McpServer): void {
  // The forms the demo asks for, built once: a resolver runs on every round of every call.
  const LocationForm = Type.Object({ location: Type.String({ minLength: 1, maxLength: 200 }) })
  const ResolutionForm = Type.Object({ resolution: oneOf(['Fixed', "Won't Fix", 'Duplicate', 'By Design'], 'Resolution type for this bug') })
  const DuplicateForm = Type.Object({ duplicateOfId: Type.Integer({ minimum: 1, description: 'Work item ID of the original bug' }) })
  const ToneForm = Type.Object({ tone: oneOf(['kind', 'blunt'], 'Tone of the review') })

  // get_weather: the location is an argument, asked for when it is missing.
  const location = resolver({
    name: 'location',
    args: ['location'],
    resolve: (args: { location?: string }) => args.location ?? elicit('Which location?', LocationForm)
  })
  mcp.tool(
    {
      name: 'get_weather',
      title: 'Weather',
      description: 'Current weather for a location (made up, but the same for the same location). Asks for the location when it is missing.',
      input: Type.Object({ location: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }),
      annotations: { readOnlyHint: true, openWorldHint: false },
      resolvers: { location }
    },
    (_args, ctx) => {
      const where = typeof ctx.resolved.location === 'string' ? ctx.resolved.location : ctx.resolved.location.location
      const seed = [...where].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7)
      const conditions = ['Sunny', 'Partly cloudy', 'Cloudy', 'Light rain', 'Windy'][seed % 5]
      return `Weather in ${where}: ${conditions}, ${(seed % 30) + 5}°C`
    }
  )

  // update_work_item: the SEP-2322 Azure DevOps example. Resolving a bug needs a resolution; a
  // "Duplicate" resolution needs the original's id, asked in a second round.
  const WorkItem = Type.Object({
    workItemId: Type.Integer({ minimum: 1 }),
    fields: Type.Record(Type.String(), Type.String())
  })
  const resolution = resolver({
    name: 'resolution',
    args: ['workItemId', 'fields'],
    resolve: (args: { workItemId: number; fields: Record<string, string> }) =>
      args.fields['System.State'] === 'Resolved'
        ? elicit(`Resolving Bug #${args.workItemId} requires a resolution. How was this bug resolved?`, ResolutionForm)
        : null
  })
  const duplicateOf = resolver({
    name: 'duplicate_of',
    needs: { resolution },
    resolve: (_args, { resolution }) =>
      resolution?.resolution === 'Duplicate'
        ? elicit('Since this is a duplicate, which work item is the original?', DuplicateForm)
        : null
  })
  mcp.tool(
    {
      name: 'update_work_item',
      title: 'Update work item',
      description: 'Update a work item; the custom rules of the project may ask for more fields (two rounds for a duplicate).',
      input: WorkItem,
      resolvers: { resolution, duplicateOf }
    },
    ({ workItemId, fields }, ctx) => {
      const { resolution: r, duplicateOf: d } = ctx.resolved
      const state = fields['System.State'] ?? 'unchanged'
      if (r === null) return `Bug #${workItemId} updated. State set to ${state}.`
      if (d === null) return `Bug #${workItemId} resolved as ${r.resolution}. State set to ${state}.`
      return `Bug #${workItemId} resolved as Duplicate of Bug #${d.duplicateOfId}. State set to ${state} and duplicate link created.`
    }
  )

  // A prompt that asks which tone to use.
  const tone = resolver({
    name: 'tone',
    resolve: () => elicit('Which tone should the review take?', ToneForm)
  })
  mcp.prompt(
    {
      name: 'code_review',
      title: 'Code review',
      description: 'Review a piece of code; asks which tone to take.',
      arguments: { code: { description: 'The code to review.', required: true } },
      resolvers: { tone }
    },
    ({ code }, ctx) => `Review this code in a ${ctx.resolved.tone.tone} tone:\n\n${code}`
  )

  // A resource that lists the client's roots.
  mcp.resource(
    {
      uri: 'demo://roots',
      name: 'roots',
      title: 'Your roots',
      description: 'The roots your client shares, read back (asks for them).',
      mimeType: 'application/json',
      resolvers: { roots: resolver({ name: 'roots', resolve: () => listRoots() }) }
    },
    (_uri, ctx) => JSON.stringify(ctx.resolved.roots)
  )
}

/** A string enum the way MCP elicitation schemas spell it (`enum`, not TypeBox's `anyOf` of consts). */
function oneOf<const T extends string>(values: readonly T[], description: string) {
  return Type.Unsafe<T>({ type: 'string', enum: values, description })
}
