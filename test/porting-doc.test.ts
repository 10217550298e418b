import { readFileSync } from 'node:fs'
import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { PureHttpClient } from '../src/client/client.js'
import { buildServer } from '../src/server.js'
import pureHttpServer from './examples/porting-pure-http.js'
import sdkServer from './examples/porting-sdk.js'

const root = new URL('..', import.meta.url)
const doc = readFileSync(new URL('docs/porting-from-sdk.md', root), 'utf8')

/** The ```ts block under `<!-- example: <path> -->` in the doc. */
function block(path: string): string | undefined {
  const at = doc.indexOf(`<!-- example: ${path} -->\n\`\`\`ts\n`)
  if (at < 0) return undefined
  const start = doc.indexOf('\n', doc.indexOf('```ts', at)) + 1
  return doc.slice(start, doc.indexOf('```\n', start))
}

t.test("the doc's examples are the files the tests compile and run", async (t) => {
  t.equal(block('test/examples/porting-sdk.ts'), readFileSync(new URL('test/examples/porting-sdk.ts', root), 'utf8'))
  // The example imports the package as a user does; the file imports the sources it is tested with.
  const file = readFileSync(new URL('test/examples/porting-pure-http.ts', root), 'utf8')
  t.equal(block('test/examples/porting-pure-http.ts'), file.replace("'../../src/index.js'", "'mcp-pure-http'"))
  t.ok(file.includes("'../../src/index.js'"), 'the replacement above replaces something')
})

t.test('the SDK server and its port list the same tool and answer the same calls', async (t) => {
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
  await sdkServer().connect(serverSide)
  const sdk = new Client({ name: 'porting-test', version: '1' })
  await sdk.connect(clientSide)
  t.teardown(() => sdk.close())

  const app = await buildServer({ mcp: pureHttpServer(), logger: false })
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const ours = new PureHttpClient({ url })

  const [sdkTool] = (await sdk.listTools()).tools
  const [ourTool] = await ours.listTools()
  for (const key of ['name', 'title', 'description'] as const) t.equal(ourTool?.[key], sdkTool?.[key], key)
  t.same(ourTool?.inputSchema.properties, sdkTool?.inputSchema.properties, 'the same argument schemas')
  t.same(ourTool?.inputSchema.required, sdkTool?.inputSchema.required)

  for (const args of [{ a: 2, b: 40 }, { a: 2 }]) {
    const expected = await sdk.callTool({ name: 'add', arguments: args })
    const got = await ours.callTool('add', args)
    t.same({ content: got.content, structuredContent: got.structuredContent }, expected, JSON.stringify(args))
  }
})
