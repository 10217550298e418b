import { readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { Type } from '@sinclair/typebox'
import createClient from 'openapi-fetch'
import type { paths } from '../../openapi/schema.js'
import { generateOpenApi } from '../../scripts/openapi-lib.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'
import { DEMO_TOOLS, build, call } from '../helpers/helper.js'

/** Every route of the binding, with its methods; the 405 helpers and HEAD must not appear. */
const ROUTES: Record<string, string[]> = {
  '/initialize': ['post'],
  '/discover': ['get'],
  '/ping': ['get'],
  '/logLevel': ['post'],
  '/completions': ['post'],
  '/tools': ['get'],
  '/tools/{name}/calls': ['post'],
  '/prompts': ['get'],
  '/prompts/{name}': ['get', 'post'],
  '/resources': ['get'],
  '/resources/templates': ['get'],
  '/resources/{uri}': ['get', 'post'],
  '/resources/subscribe': ['post'],
  '/resources/unsubscribe': ['post'],
  '/subscriptions/listen': ['post'],
  '/notifications': ['get', 'post'],
  '/requests': ['post'],
  '/responses': ['post'],
  '/tasks/{taskId}': ['get'],
  '/tasks/{taskId}/update': ['post'],
  '/tasks/{taskId}/cancel': ['post'],
  '/openapi.json': ['get']
}

const bodySchema = (op: any) => op.requestBody.content['application/json'].schema
/** The tool's own narrowing of the shared CallToolResult (allOf: [$ref, {structuredContent}]), or the $ref alone. */
const callResultSchema = (op: any) =>
  op.responses['200'].content['application/json'].schema.anyOf.find((s: any) => s.allOf !== undefined || s.$ref?.endsWith('/CallToolResult'))

/** Where two texts first differ, as a line number and both lines, for a readable failure. */
function firstDifference(committed: string, generated: string) {
  const a = committed.split('\n')
  const b = generated.split('\n')
  const line = a.findIndex((text, i) => text !== b[i])
  const at = line === -1 ? a.length : line
  return { line: at + 1, committed: a[at], generated: b[at] }
}

t.test('the committed openapi/ files are what the code generates now', async (t) => {
  for (const [name, generated] of Object.entries(await generateOpenApi())) {
    const committed = await readFile(new URL(`../../openapi/${name}`, import.meta.url), 'utf8').catch(() => '')
    const same = committed === generated
    t.ok(same, `openapi/${name} is stale: run \`npm run openapi\` and commit the result`, same ? {} : firstDifference(committed, generated))
  }
})

t.test('the document describes every route of the binding and one operation per tool', async (t) => {
  const { app } = await build(t)
  const res = await call(app, { url: '/openapi.json' })
  t.equal(res.status, 200)
  const doc = res.body
  t.equal(doc.openapi, '3.1.0')
  const methods = Object.fromEntries(Object.entries(doc.paths).map(([path, item]) => [path, Object.keys(item as object).sort()]))
  const toolPaths = Object.fromEntries(DEMO_TOOLS.map((name) => [`/tools/${name}/calls`, ['post']]))
  t.strictSame(methods, { ...ROUTES, ...toolPaths }, 'exactly the binding: no 405 helpers, no HEAD')

  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item as object).map((op) => op.operationId))
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
  t.notOk(ids.includes(undefined), 'every operation has an operationId')

  const { tools } = (await call(app, { url: '/tools' })).body
  t.same(tools.map((tool: { name: string }) => tool.name), DEMO_TOOLS)
  for (const tool of tools) {
    const op = doc.paths[`/tools/${tool.name}/calls`].post
    t.equal(op.operationId, `callTool_${tool.name}`)
    t.equal(op.description, tool.description)
    t.notOk(op.parameters.some((p: { in: string }) => p.in === 'path'), `${tool.name}: no path parameter left`)
    t.strictSame(bodySchema(op).properties.arguments, tool.inputSchema, `${tool.name}: arguments is the inputSchema`)
    t.strictSame(bodySchema(op).required, ['arguments'])
  }
  const add = tools.find((tool: { name: string }) => tool.name === 'add')
  const addResult = callResultSchema(doc.paths['/tools/add/calls'].post)
  t.strictSame(addResult.allOf[0], { $ref: '#/components/schemas/CallToolResult' })
  t.strictSame(addResult.allOf[1].properties.structuredContent, add.outputSchema, 'add: structuredContent is the outputSchema')
  t.strictSame(
    callResultSchema(doc.paths['/tools/echo/calls'].post),
    { $ref: '#/components/schemas/CallToolResult' },
    'a tool without outputSchema keeps the shared CallToolResult'
  )
  t.strictSame(doc.paths['/tools/add/calls'].post.requestBody.content['application/json'].example, { arguments: { a: 0, b: 0 } }, 'a minimal example body')

  // What a generated client must handle: 429 and 503 (with Retry-After) anywhere, 409 on a tool call.
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.values(item as object).map((op) => [path, op] as const))
  t.same(operations.filter(([, op]) => !('429' in op.responses && '503' in op.responses)).map(([path]) => path), [], 'every operation documents 429 and 503')
  for (const path of ['/tools/{name}/calls', '/tools/echo/calls']) t.ok('409' in doc.paths[path].post.responses, `${path}: 409 documented`)
})

t.test('tools registered or removed at run time appear in and leave the document', async (t) => {
  const { app, mcp } = await build(t)
  const paths = async () => (await call(app, { url: '/openapi.json' })).body.paths
  t.notOk('/tools/late/calls' in (await paths()))
  const input = Type.Object({ n: Type.Integer() })
  const registration = mcp.tool({ name: 'late', description: 'Added at run time.', input }, ({ n }) => String(n))
  const op = (await paths())['/tools/late/calls']?.post
  t.equal(op?.operationId, 'callTool_late')
  t.equal(op?.description, 'Added at run time.')
  t.strictSame(bodySchema(op).properties.arguments, JSON.parse(JSON.stringify(input)))
  registration.remove()
  const after = await paths()
  t.notOk('/tools/late/calls' in after)
  t.ok('/tools/add/calls' in after, 'the other tools stay')
})

t.test('a capability the server does not offer has no operations; offered again, they are back', async (t) => {
  const { app, mcp } = await build(t)
  const operations = async () => {
    const doc = (await call(app, { url: '/openapi.json' })).body
    return Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((item) => Object.values(item).map((op) => op.operationId))
  }
  const all = await operations()
  mcp.offer({ tools: {} }) // as a gateway in front of a tools-only upstream does
  const toolsOnly = await operations()
  const gone = all.filter((id) => !toolsOnly.includes(id)).sort()
  t.same(gone, ['complete', 'getPrompt', 'getPromptWithBody', 'listPrompts', 'listResourceTemplates', 'listResources', 'readResource', 'readResourceWithBody', 'setLogLevel', 'subscribeResource', 'unsubscribeResource'])
  t.ok(toolsOnly.includes('callTool') && toolsOnly.includes('callTool_echo') && toolsOnly.includes('listTools'), 'the tools stay')
  mcp.offer({})
  t.notOk((await operations()).some((id) => id.startsWith('callTool') || id === 'listTools'), 'nor tools, when not offered')
  mcp.offer(undefined)
  t.same((await operations()).sort(), [...all].sort(), 'everything again')
})

t.test('a client generated from the committed document calls the server over a real socket', async (t) => {
  const app = await buildServer({ logger: false, mcp: createDemoServer() })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const client = createClient<paths>({ baseUrl: `http://127.0.0.1:${port}` })
  const sent: string[] = []
  client.use({ onRequest: ({ request }) => void sent.push(new URL(request.url).pathname) })

  const add = await client.POST('/tools/add/calls', { body: { arguments: { a: 2, b: 3 } } })
  t.equal(add.response.status, 200)
  t.equal(add.data !== undefined && 'content' in add.data ? add.data.structuredContent?.sum : undefined, 5)

  const echo = await client.POST('/tools/echo/calls', { body: { arguments: { text: 'hello' } } })
  t.strictSame(echo.data, { content: [{ type: 'text', text: 'hello' }], resultType: 'complete' })

  const list = await client.GET('/tools')
  t.same(list.data?.tools.map((tool) => tool.name), DEMO_TOOLS)

  // openapi-fetch encodes path parameters with encodeURIComponent, which is what the server expects.
  const readme = await client.GET('/resources/{uri}', { params: { path: { uri: 'demo://readme' } } })
  t.equal(sent.at(-1), '/resources/demo%3A%2F%2Freadme')
  t.match(readme.data !== undefined && 'contents' in readme.data ? readme.data.contents[0] : undefined, {
    uri: 'demo://readme',
    text: /^# MCP Pure HTTP demo/
  })

  // An MCP App: the tool's operation names its view (x-mcp-ui), and the view reads through the generated route.
  const doc = JSON.parse(await readFile(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'))
  const view = doc.paths['/tools/echo_app/calls'].post['x-mcp-ui']
  t.same(view, { resourceUri: 'ui://demo/echo', read: '/resources/ui%3A%2F%2Fdemo%2Fecho' })
  t.notOk('x-mcp-ui' in doc.paths['/tools/echo/calls'].post, 'a tool without a view has none')
  const html = await client.GET('/resources/{uri}', { params: { path: { uri: view.resourceUri } } })
  t.equal(sent.at(-1), view.read)
  t.match(html.data !== undefined && 'contents' in html.data ? html.data.contents[0] : undefined, {
    uri: 'ui://demo/echo',
    mimeType: 'text/html;profile=mcp-app',
    text: /^<!doctype html>/,
    _meta: { ui: { prefersBorder: true } }
  })

  const unknown = await client.POST('/tools/{name}/calls', { params: { path: { name: 'nope' } }, body: {} })
  t.equal(unknown.response.status, 404)
  t.equal(unknown.data, undefined)
  t.strictSame(unknown.error, { code: -32602, message: 'Unknown tool: nope' })

  // @ts-expect-error each tool's operation types its arguments: a string `a` does not compile
  const wrong = await client.POST('/tools/add/calls', { body: { arguments: { a: 'x', b: 3 } } })
  t.equal(wrong.response.status, 200, 'SEP-1303: a tool error the model reads, not a protocol error')
  const answered = wrong.data as { isError?: boolean; content?: unknown } | undefined
  t.same([answered?.isError, answered?.content], [true, [{ type: 'text', text: 'Invalid arguments for tool add: a must be number' }]])
})

t.test('tool schemas with local $refs and names with dots stay valid in the document', async (t) => {
  const { app, mcp } = await build(t)
  const Point = Type.Object({ x: Type.Number(), y: Type.Number() })
  const input = Type.Unsafe<{ p: { x: number; y: number } }>({
    type: 'object',
    $defs: { P: Point },
    properties: { p: { $ref: '#/$defs/P' }, tag: { const: { $ref: '#/not/a/ref' } } },
    required: ['p']
  })
  mcp.tool({ name: 'geo.point', input, output: Type.Unsafe<{ q: unknown }>({ type: 'object', $defs: { Q: Point }, properties: { q: { $ref: '#/$defs/Q' } } }) }, ({ p }) => ({ structuredContent: { q: p } }))
  mcp.tool({ name: 'geo-point' }, () => 'dash')
  const doc = (await call(app, { url: '/openapi.json' })).body
  const dotted = doc.paths['/tools/geo.point/calls'].post
  t.equal(dotted.operationId, 'callTool_geo.point')
  t.equal(doc.paths['/tools/geo-point/calls'].post.operationId, 'callTool_geo-point', 'no two tools share an operationId')
  const ref = dotted.requestBody.content['application/json'].schema.properties.arguments.properties.p.$ref
  t.equal(ref, '#/paths/~1tools~1geo.point~1calls/post/requestBody/content/application~1json/schema/properties/arguments/$defs/P')
  // Resolve the rebased pointer against the document itself.
  const resolve = (pointer: string) =>
    pointer.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).reduce((o: any, k) => o?.[k], doc)
  t.same(resolve(ref).required, ['x', 'y'], 'the $ref resolves to the definition')
  const args = dotted.requestBody.content['application/json'].schema.properties.arguments
  t.same(args.properties.tag.const, { $ref: '#/not/a/ref' }, 'values under const are data, not references')
  const out = callResultSchema(dotted).allOf[1]
  t.same(resolve(out.properties.structuredContent.properties.q.$ref).required, ['x', 'y'])
  await t.resolves(import('openapi-typescript').then((m) => m.default(doc)), 'openapi-typescript accepts the document')
  const res = await call(app, { method: 'POST', url: '/tools/geo.point/calls', payload: { arguments: { p: { x: 1, y: 2 } } } })
  t.same(res.body.structuredContent, { q: { x: 1, y: 2 } })
})
