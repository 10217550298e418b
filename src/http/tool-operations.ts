import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'

type Doc = Record<string, unknown> & { paths?: Record<string, Record<string, unknown>> }
type Json = Record<string, any>

/**
 * The OpenAPI 3.1 document: the routes as @fastify/swagger describes them, plus one typed operation
 * per registered tool (`POST /tools/<name>/calls` with the tool's input schema as `arguments` and its
 * output schema as `structuredContent`), so a generated client gets typed calls. Rebuilt only when
 * the tool list changes.
 */
export function openapiDocument(fastify: FastifyInstance, mcp: McpServer): () => Doc {
  let cached: Doc | undefined
  mcp.onChange((kind) => {
    if (kind === 'tools') cached = undefined
  })
  return () => {
    if (cached !== undefined) return cached
    const base = structuredClone(fastify.swagger() as Doc)
    const paths = (base.paths ??= {})
    const generic = paths[`${fastify.prefix}/tools/{name}/calls`]?.post as Json | undefined
    for (const { definition: tool } of mcp.tools.values()) {
      if (generic === undefined) break
      const path = `${fastify.prefix}/tools/${encodeURIComponent(tool.name)}/calls`
      const op = structuredClone(generic)
      // Tool names may hold `.` and `-`; OpenAPI allows any characters in an operationId, and
      // keeping the name as it is keeps ids unique.
      op.operationId = `callTool_${tool.name}`
      op.summary = `tools/call ${tool.name}`
      op.description = tool.description ?? tool.title ?? `Call the ${tool.name} tool.`
      op.tags = ['tool calls']
      op.parameters = (op.parameters as { in: string }[] | undefined)?.filter((p) => p.in !== 'path')
      const bodyAt = ['paths', path, 'post', 'requestBody', 'content', 'application/json', 'schema']
      const body = op.requestBody.content['application/json'].schema
      body.properties.arguments = rebase(tool.inputSchema, pointer(...bodyAt, 'properties', 'arguments'))
      body.required = ['arguments']
      if (tool.outputSchema !== undefined) {
        const ok = op.responses['200'].content['application/json'].schema
        const i = (ok.anyOf as Json[]).findIndex((s) => s.properties?.content !== undefined)
        const at = pointer('paths', path, 'post', 'responses', '200', 'content', 'application/json', 'schema', 'anyOf', String(i))
        ok.anyOf[i].properties.structuredContent = rebase(tool.outputSchema, `${at}${pointer('properties', 'structuredContent')}`)
      }
      paths[path] = { post: op }
    }
    cached = base
    return base
  }
}

/** A JSON pointer (RFC 6901) from path segments. */
function pointer(...parts: string[]): string {
  return parts.map((p) => '/' + p.replace(/~/g, '~0').replace(/\//g, '~1')).join('')
}

/**
 * A tool schema's local `$ref`s (`#/$defs/...`) point at the schema's own root; once it is placed
 * inside the document at `at`, they must point there.
 */
function rebase(schema: unknown, at: string): unknown {
  if (Array.isArray(schema)) return schema.map((s) => rebase(s, at))
  if (schema === null || typeof schema !== 'object') return schema
  return Object.fromEntries(
    Object.entries(schema).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith('#')
        ? `#${at}${v.slice(1)}`
        : k === 'const' || k === 'default' || k === 'examples' || k === 'enum'
          ? v
          : rebase(v, at)
    ])
  )
}
