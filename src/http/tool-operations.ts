import type { FastifyInstance } from 'fastify'
import type { McpServer } from '../core/mcp-server.js'
import { METHODS, REST_ROUTES, notOffered } from '../methods.js'
import { SHARED_SCHEMAS } from './openapi-document.js'
import { referenceComponents } from './openapi-refs.js'

type Doc = Record<string, unknown> & { paths: Record<string, Record<string, unknown>> }
type Json = Record<string, any>

const CALL_TOOL_RESULT = '#/components/schemas/CallToolResult'
const OTHER_ERRORS = {
  description:
    'Any other error, in the same shape: 401 or 403 (authorization, Host/Origin checks), 405, 409 (a retried call with another body), 413, 415, 429 and 503 (with Retry-After).',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/McpError' } } }
}

/**
 * The OpenAPI 3.1 document: the routes as @fastify/swagger describes them, plus one typed operation
 * per registered tool (`POST /tools/<name>/calls` with the tool's input schema as `arguments` and its
 * output schema as `structuredContent`), so a generated client gets typed calls; without the
 * operations of capabilities the server does not offer (`McpServer.offer`). Rebuilt only when the
 * tool list or the offer changes.
 */
export function openapiDocument(fastify: FastifyInstance, mcp: McpServer): OpenApiDocument {
  let cached: Doc | undefined
  // `offer` replaces the offers: a document made for others is stale.
  let madeFor = mcp.offers
  const stop = mcp.onChange((kind) => {
    if (kind === 'tools') cached = undefined
  })
  return Object.assign(() => {
    if (cached !== undefined && madeFor === mcp.offers) return cached
    madeFor = mcp.offers
    const base = structuredClone(fastify.swagger() as Doc)
    referenceComponents(base, SHARED_SCHEMAS.map((s) => s.$id as string))
    // The statuses a route cannot foresee (authorization, limits, load, method) in one place.
    const paths = base.paths
    for (const [path, item] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(item) as [string, Json][]) {
        // A method of a capability not offered (a gateway's upstream lacks it) is -32601: no operation.
        const route = REST_ROUTES.get(op.operationId as string)
        if (route !== undefined && notOffered(mcp, METHODS[route.name].capability) !== undefined) delete item[method]
        else op.responses.default ??= OTHER_ERRORS
      }
      if (Object.keys(item).length === 0) delete paths[path]
    }
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
      const view = viewOf(tool._meta)
      if (view !== undefined) op['x-mcp-ui'] = { ...view, read: `${fastify.prefix}/resources/${encodeURIComponent(view.resourceUri)}` }
      op.parameters = (op.parameters as { in: string }[] | undefined)?.filter((p) => p.in !== 'path')
      const bodyAt = ['paths', path, 'post', 'requestBody', 'content', 'application/json', 'schema']
      const body = op.requestBody.content['application/json'].schema
      body.properties.arguments = rebase(tool.inputSchema, pointer(...bodyAt, 'properties', 'arguments'))
      body.required = ['arguments']
      op.requestBody.content['application/json'].example = { arguments: exampleOf(tool.inputSchema) }
      if (tool.outputSchema !== undefined) {
        // The shared CallToolResult, narrowed: this tool's structuredContent is its outputSchema.
        const ok = op.responses['200'].content['application/json'].schema
        const i = (ok.anyOf as Json[]).findIndex((s) => s.$ref === CALL_TOOL_RESULT)
        const at = pointer('paths', path, 'post', 'responses', '200', 'content', 'application/json', 'schema', 'anyOf', String(i), 'allOf', '1')
        const structuredContent = rebase(tool.outputSchema, `${at}${pointer('properties', 'structuredContent')}`)
        ok.anyOf[i] = { allOf: [{ $ref: CALL_TOOL_RESULT }, { type: 'object', properties: { structuredContent } }] }
      }
      paths[path] = { post: op }
    }
    cached = base
    return base
  }, { stop })
}

/**
 * The document, built when first asked for; `stop()` when its app closes: the server may outlive the
 * app (a gateway's reload serves the same one from the next app).
 */
export type OpenApiDocument = (() => Doc) & { stop: () => void }

/**
 * A tool's MCP App view (SEP-1865 `_meta.ui`): its `ui://` URI and, when given, who may call it; for
 * the operation's `x-mcp-ui`, with where the view is read. Anything else (a gateway's upstream may
 * send any `_meta`) is not a view.
 */
function viewOf(meta: Record<string, unknown> | undefined): { resourceUri: string; visibility?: unknown[] } | undefined {
  const ui = meta?.ui as { resourceUri?: unknown; visibility?: unknown } | undefined
  if (typeof ui?.resourceUri !== 'string' || !ui.resourceUri.startsWith('ui://')) return undefined
  return Array.isArray(ui.visibility) ? { resourceUri: ui.resourceUri, visibility: ui.visibility } : { resourceUri: ui.resourceUri }
}

/**
 * A small valid-looking example of a schema, for the per-tool request body: required properties only,
 * each its `default`, first `examples` entry, `const`, first `enum` value, or a placeholder of its
 * type. An interactive page (`/docs`) pre-fills it, so "try it" sends `{"arguments":{"text":"string"}}`
 * rather than every optional field of the generic body.
 */
export function exampleOf(schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object') return {}
  const s = schema as Json
  if ('default' in s) return s.default
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0]
  if ('const' in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0]
  const type = Array.isArray(s.type) ? s.type[0] : s.type
  switch (type) {
    case 'string': return 'string'
    case 'integer': return s.minimum ?? 0
    case 'number': return s.minimum ?? 0
    case 'boolean': return true
    case 'array': return []
    case 'null': return null
  }
  const props = (s.properties ?? {}) as Json
  const required = Array.isArray(s.required) ? (s.required as string[]) : []
  return Object.fromEntries(required.filter((k) => k in props).map((k) => [k, exampleOf(props[k])]))
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
