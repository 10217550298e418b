import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { fetch } from 'undici'
import type { McpServer } from '../../src/core/mcp-server.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { DEMO_TOOLS } from '../helpers/helper.js'
import { listenWithAgent } from '../helpers/rpc.js'

/**
 * The official TypeScript SDK (`@modelcontextprotocol/sdk` 1.x, which speaks up to 2025-11-25) as a
 * client of the demo over a real socket: its Streamable HTTP transport, handshake and typed calls.
 * The 1.x client knows no `input_required` (multi round-trip requests are 2026-07-28), so an MRTR
 * flow cannot go through it; it is asked the 2025 way instead: on the SSE stream of its POST.
 */
/**
 * The SDK client of `mcp` served on a real socket, its requests through the server's own agent
 * (closed with it); `connect()` connects it and closes it when the test ends.
 */
async function sdkClient(t: Test, mcp: McpServer, name: string, capabilities: Record<string, object>) {
  const server = await listenWithAgent(t, { mcp, logger: false })
  const viaAgent = ((url, init) => fetch(url, { ...(init as object), dispatcher: server.agent })) as FetchLike
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: viaAgent })
  const client = new Client({ name, version: '1.0.0' }, { capabilities })
  const connect = async () => {
    await client.connect(transport)
    t.teardown(() => client.close())
  }
  return { transport, client, connect, server }
}

t.test('the official SDK client drives the demo through /mcp', async (t) => {
  const { transport, client, connect } = await sdkClient(t, createDemoServer(), 'sdk-test', { elicitation: {} })
  await connect()

  t.equal(transport.protocolVersion, '2025-11-25')
  t.equal(transport.sessionId, undefined, 'stateless: no session')
  t.equal(client.getServerVersion()?.name, 'mcp-pure-http-demo')
  t.match(client.getServerCapabilities(), { tools: {}, prompts: {}, resources: {}, completions: {} })
  t.match(client.getInstructions(), /demo server/)

  const { tools } = await client.listTools()
  t.same(tools.map((x) => x.name), DEMO_TOOLS)
  t.same(await client.callTool({ name: 'echo', arguments: { text: 'über' } }), { content: [{ type: 'text', text: 'über' }] })
  // The SDK checks structuredContent against the tool's outputSchema itself.
  t.same((await client.callTool({ name: 'add', arguments: { a: 1.5, b: 2 } })).structuredContent, { sum: 3.5 })
  t.same(await client.readResource({ uri: 'demo://items/2' }), {
    contents: [{ uri: 'demo://items/2', mimeType: 'application/json', text: '{"id":2,"name":"banana"}' }]
  })
  t.same((await client.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate), ['demo://items/{id}'])
  const prompt = await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } })
  t.same(prompt.messages, [{ role: 'user', content: { type: 'text', text: 'Please write a short, warm greeting for Ada.' } }])
  t.same((await client.complete({ ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: 'G' } })).completion.values, ['Grace'])
  t.same(await client.ping(), {})
  t.same(await client.setLoggingLevel('warning'), {})

  // A protocol error reaches the SDK as its McpError, with the code (errors ride in a 200 for it).
  await t.rejects(client.readResource({ uri: 'demo://items/9' }), { code: -32002, message: /Resource not found/ })
  // It declared elicitation but set no handler: it answers the question with an error, which fails the call.
  t.match(await client.callTool({ name: 'get_weather', arguments: {} }), { isError: true, content: [{ text: /elicitation\/create with an error/ }] })
})

t.test('a 2025-era SDK client is asked on the SSE stream of its POST, and its answers reach the handler', async (t) => {
  const mcp = createDemoServer()
  mcp.tool({ name: 'haiku' }, async (_a, ctx) => {
    const m = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'a haiku' } }], maxTokens: 50 })
    return `${m.model}: ${(m.content as { text: string }).text}`
  })
  const { client, connect, server } = await sdkClient(t, mcp, 'sdk-asked', { elicitation: {}, sampling: {}, roots: {} })
  const asked: string[] = []
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message)
    return { action: 'accept', content: { location: 'Lisbon' } }
  })
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'test-model', content: { type: 'text', text: 'old pond' } }))
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }))
  await connect()

  t.match(await client.callTool({ name: 'get_weather', arguments: {} }), { content: [{ type: 'text', text: /^Weather in Lisbon: / }] })
  t.same(asked, ['Which location?'])
  t.same(await client.callTool({ name: 'haiku', arguments: {} }), { content: [{ type: 'text', text: 'test-model: old pond' }] })
  t.same(JSON.parse(((await client.readResource({ uri: 'demo://roots' })).contents[0] as { text: string }).text), [{ uri: 'file:///work', name: 'work' }])
  // The same tool through the Pure HTTP binding's queue is untouched: nothing was left on /requests.
  const left = await fetch(server.url.replace(/\/mcp$/, '/requests'), { method: 'POST', dispatcher: server.agent, headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.equal(left.status, 204)
})
