import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'

type Doc = Record<string, unknown> & { paths?: Record<string, Record<string, unknown>> }

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
    const generic = paths[`${fastify.prefix}/tools/{name}/calls`]?.post as Record<string, unknown> | undefined
    for (const { definition: tool } of mcp.tools.values()) {
      if (generic === undefined) break
      const op = structuredClone(generic) as Record<string, any>
      op.operationId = `callTool_${tool.name.replace(/[^A-Za-z0-9_]/g, '_')}`
      op.summary = `tools/call ${tool.name}`
      op.description = tool.description ?? tool.title ?? `Call the ${tool.name} tool.`
      op.tags = ['tool calls']
      op.parameters = (op.parameters as { in: string }[] | undefined)?.filter((p) => p.in !== 'path')
      const body = op.requestBody.content['application/json'].schema
      body.properties.arguments = tool.inputSchema
      body.required = ['arguments']
      if (tool.outputSchema !== undefined) {
        const ok = op.responses['200'].content['application/json'].schema
        const result = ok.anyOf.find((s: Record<string, any>) => s.properties?.content !== undefined)
        result.properties.structuredContent = tool.outputSchema
      }
      paths[`${fastify.prefix}/tools/${encodeURIComponent(tool.name)}/calls`] = { post: op }
    }
    cached = base
    return base
  }
}
