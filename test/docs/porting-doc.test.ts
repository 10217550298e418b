import { readFileSync } from 'node:fs'
import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { PureHttpClient } from '../../src/client/client.js'
import { buildServer } from '../../src/server.js'
import pureHttpServer from '../examples/porting-pure-http.js'
import sdkServer from '../examples/porting-sdk.js'
import { createNotes as notesTypeBox } from '../examples/readme-notes-typebox.js'
import { createNotes as notesZod } from '../examples/readme-notes-zod.js'
import { build, call } from '../helpers/helper.js'

const root = new URL('../..', import.meta.url)
const porting = readFileSync(new URL('docs/porting-from-sdk.md', root), 'utf8')
const readme = readFileSync(new URL('README.md', root), 'utf8')

/** The ```ts block under `<!-- example: <path> -->` in a page (the porting doc unless told). */
function block(path: string, doc = porting): string | undefined {
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

t.test("the README's authoring example, TypeBox and zod: the files the tests run, serving the same answers", async (t) => {
  for (const path of ['test/examples/readme-notes-typebox.ts', 'test/examples/readme-notes-zod.ts']) {
    const file = readFileSync(new URL(path, root), 'utf8')
    t.ok(file.includes("'../../src/index.js'"), `${path} imports the sources`)
    t.equal(block(path, readme), file.replace("'../../src/index.js'", "'mcp-pure-http'"), `README.md shows ${path}`)
  }
  const answers = async (mcp: ReturnType<typeof notesTypeBox>) => {
    const { app } = await build(t, { mcp })
    const [tool] = (await call(app, { url: '/tools' })).body.tools
    const post = (payload: unknown) => call(app, { method: 'POST', url: '/tools/add_note/calls', payload: payload as Record<string, unknown> })
    return {
      properties: tool.inputSchema.properties,
      required: tool.inputSchema.required,
      added: (await post({ arguments: { text: 'milk' } })).body,
      read: (await call(app, { url: `/resources/${encodeURIComponent('notes://1')}` })).body,
      missing: (await call(app, { url: `/resources/${encodeURIComponent('notes://9')}` })).status,
      refused: (await post({ arguments: { text: '' } })).body
    }
  }
  const box = await answers(notesTypeBox())
  t.same(await answers(notesZod()), box)
  t.match(box, { added: { structuredContent: { id: '1' } }, read: { contents: [{ uri: 'notes://1', text: 'milk' }] }, missing: 404, refused: { isError: true, content: [{ type: 'text', text: /^Invalid arguments for tool add_note: / }] } })
})
