import t from 'tap'
import Fastify from 'fastify'
import { McpServer } from '../../src/core/mcp-server.js'
import { registerOpenApi } from '../../src/http/openapi-document.js'
import { openapiDocument } from '../../src/http/tool-operations.js'

t.test('the document is built once, and again only when the tool list changes', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  const mcp = new McpServer({ name: 'bare', version: '1' })
  await registerOpenApi(app, { mcp, apiKeys: false })
  app.get('/ping', async () => 'pong')
  await app.ready()
  const document = openapiDocument(app, mcp)
  const first = document()
  t.equal(document(), first, 'the same document while nothing changes')
  mcp.prompt({ name: 'greeting' }, () => 'Say hello')
  t.equal(document(), first, 'a prompt is no change to it')
  mcp.tool({ name: 'echo' }, async () => 'echo')
  const second = document()
  t.not(second, first, 'a tool is')
  // This app serves no `POST /tools/{name}/calls` (no MCP routes): nothing to derive a tool's operation from.
  t.same(Object.keys(second.paths), ['/ping'])
  t.match(second.paths['/ping'], { get: { responses: { default: { description: /^Any other error/ } } } })
})
