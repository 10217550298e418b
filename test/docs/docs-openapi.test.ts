import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { buildServer } from '../../src/server.js'
import { DEMO_TOOLS, build, call } from '../helpers/helper.js'
import { REDOCLY } from '../tools/paths.js'

const run = promisify(execFile)
// Generating and compiling a client and two lint runs take a while on a busy machine.
t.setTimeout(600_000)
const root = fileURLToPath(new URL('../..', import.meta.url))
const bin = (name: string) => join(root, 'node_modules', '.bin', name)
const committed = async () => JSON.parse(await readFile(join(root, 'openapi', 'openapi.json'), 'utf8'))

/** The document of the demo with OAuth on: the other form of `security`. */
async function oauthDocument(t: Test) {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256' }] }
  const [issuer, audience] = ['https://auth.example.test', 'https://mcp.example.test']
  const { app } = await build(t, { oauth: { issuer, audience, jwks } })
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k' }).setIssuer(issuer).setAudience(audience)
    .setSubject('docs').setExpirationTime('5m').sign(privateKey)
  const res = await call(app, { url: '/openapi.json', headers: { authorization: `Bearer ${token}` } })
  t.equal(res.status, 200)
  return res.body
}

/** A directory removed after the test; under the project, where tap's TypeScript loader imports from. */
async function scratch(t: Test): Promise<string> {
  await mkdir(join(root, '.tap'), { recursive: true })
  const dir = await mkdtemp(join(root, '.tap', 'openapi-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

t.test('redocly lint (recommended rules) passes on the document, with and without OAuth', async (t) => {
  const dir = await scratch(t)
  const withOAuth = join(dir, 'oauth.json')
  await writeFile(withOAuth, JSON.stringify(await oauthDocument(t)))
  for (const file of ['openapi/openapi.json', withOAuth]) {
    // A failed lint exits non-zero, which rejects with the report in the error's stdout.
    const { stdout } = await run(REDOCLY, ['lint', file, '--extends', 'recommended', '--format', 'json'], {
      cwd: root,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
    }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
    const report = JSON.parse(stdout)
    t.strictSame(report.problems, [], `${file}: no errors and no warnings`)
    t.strictSame(report.totals, { errors: 0, warnings: 0, ignored: 0 })
  }
})

t.test('security, servers, shared components and an error response on every operation', async (t) => {
  const doc = await committed()
  t.strictSame(doc.security, [], 'no authentication: declared as none')
  t.strictSame(doc.servers, [{ url: '/', description: 'This server' }])
  const oauth = await oauthDocument(t)
  t.strictSame(oauth.security, [{ bearer: [] }])
  t.equal(oauth.components.securitySchemes.bearer.scheme, 'bearer')
  t.strictSame(oauth.paths['/.well-known/oauth-protected-resource'].get.security, [], 'the metadata needs no token')

  const names = Object.keys(doc.components.schemas)
  for (const name of ['McpError', 'ContentBlock', 'TextContent', 'CallToolResult', 'InputRequiredResult', 'CreateTaskResult', 'DetailedTask', 'ListToolsResult', 'GetPromptResult', 'ReadResourceResult']) {
    t.ok(names.includes(name), `components.schemas.${name}`)
  }
  const text = JSON.stringify(doc)
  t.equal(text.split('"A piece of content: text, image').length - 1, 1, 'the content-block union is written once, then referenced')
  t.strictSame(doc.paths['/tools/{name}/calls'].post.responses['202'].content['application/json'].schema, { $ref: '#/components/schemas/CreateTaskResult' })
  t.strictSame(doc.components.schemas.CallToolResult.properties.content.items, { $ref: '#/components/schemas/ContentBlock' })

  for (const [path, item] of Object.entries(doc.paths) as [string, Record<string, any>][]) {
    for (const [method, op] of Object.entries(item)) {
      const statuses = Object.keys(op.responses)
      t.ok(statuses.some((s) => s.startsWith('4')), `${method} ${path}: a 4xx response`)
      const error = { $ref: '#/components/schemas/McpError' }
      for (const status of statuses.filter((s) => s.startsWith('4') || s.startsWith('5') || s === 'default')) {
        t.strictSame(op.responses[status].content['application/json'].schema, error, `${method} ${path} ${status}: the error object`)
      }
    }
  }
})

t.test('a @hey-api/openapi-ts client: named types that compile, calls over a real socket', async (t) => {
  const dir = await scratch(t)
  const out = join(dir, 'client')
  const { createClient } = await import('../tools/openapi-ts.js')
  await createClient({
    input: join(root, 'openapi', 'openapi.json'),
    output: { path: out, importFileExtension: '.js' },
    plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
    logs: { level: 'silent' }
  })
  const types = await readFile(join(out, 'types.gen.ts'), 'utf8')
  for (const name of ['CallToolResult', 'InputRequiredResult', 'CreateTaskResult', 'McpError', 'ContentBlock', 'DetailedTask']) {
    t.match(types, new RegExp(`^export type ${name} = `, 'm'), `a named ${name} type`)
  }

  // The named types as a user writes with them, checked by the compiler: a wrong type must not compile.
  await writeFile(
    join(dir, 'use.ts'),
    `import { callToolAdd, type CallToolResult, type McpError } from './client/index.js'
export async function sum(): Promise<number | undefined> {
  const { data, error } = await callToolAdd({ body: { arguments: { a: 1, b: 2 } } })
  const failure: McpError | undefined = error
  if (failure !== undefined || data === undefined || !('content' in data)) return undefined
  const result: CallToolResult = data
  const n: number | undefined = data.structuredContent?.sum
  // @ts-expect-error arguments are typed by the tool's input schema
  await callToolAdd({ body: { arguments: { a: 'one', b: 2 } } })
  return result.isError === true ? undefined : n
}
`
  )
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023', 'DOM', 'DOM.Iterable'], skipLibCheck: true, types: [] },
      files: ['use.ts']
    })
  )
  const tsc = await run(bin('tsc'), ['-p', join(dir, 'tsconfig.json')]).then(() => '', (err: { stdout?: string }) => err.stdout ?? 'tsc failed')
  t.equal(tsc, '', 'the generated client and its named types compile under strict')

  const app = await buildServer({ logger: false, mcp: createDemoServer() })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const sdk = await import(pathToFileURL(join(out, 'index.ts')).href)
  const { client } = await import(pathToFileURL(join(out, 'client.gen.ts')).href)
  client.setConfig({ baseUrl: `http://127.0.0.1:${port}` })

  const echo = await sdk.callToolEcho({ body: { arguments: { text: 'hello' } } })
  t.equal(echo.response.status, 200)
  t.strictSame(echo.data, { content: [{ type: 'text', text: 'hello' }], resultType: 'complete' })
  const add = await sdk.callToolAdd({ body: { arguments: { a: 2, b: 3 } } })
  t.same(add.data.structuredContent, { sum: 5 })
  const list = await sdk.listTools()
  t.same(list.data.tools.map((tool: { name: string }) => tool.name), DEMO_TOOLS)
  const readme = await sdk.readResource({ path: { uri: 'demo://readme' } })
  t.equal(readme.response.url, `http://127.0.0.1:${port}/resources/demo%3A%2F%2Freadme`, 'the URI travels as one encoded segment')
  t.match(readme.data.contents[0].text, /^# MCP Pure HTTP demo/)
  const unknown = await sdk.callTool({ path: { name: 'nope' }, body: {} })
  t.equal(unknown.response.status, 404)
  t.strictSame(unknown.error, { code: -32602, message: 'Unknown tool: nope' })
})

t.test('the per-tool example body: required properties, each from its schema', async (t) => {
  const { exampleOf } = await import('../../src/http/tool-operations.js')
  const schema = {
    type: 'object',
    required: ['s', 'i', 'n', 'b', 'a', 'z', 'd', 'e', 'c', 'en', 'o', 'u', 'missing'],
    properties: {
      s: { type: 'string' },
      i: { type: 'integer', minimum: 3 },
      n: { type: ['number', 'null'] },
      b: { type: 'boolean' },
      a: { type: 'array' },
      z: { type: 'null' },
      d: { type: 'string', default: 'dflt' },
      e: { type: 'string', examples: ['ex'] },
      c: { const: 7 },
      en: { enum: ['x', 'y'] },
      o: { type: 'object', properties: { deep: { type: 'integer' } }, required: ['deep'] },
      u: true,
      optional: { type: 'string' }
    }
  }
  t.strictSame(exampleOf(schema), { s: 'string', i: 3, n: 0, b: true, a: [], z: null, d: 'dflt', e: 'ex', c: 7, en: 'x', o: { deep: 0 }, u: {} })
  t.strictSame(exampleOf({ type: 'object' }), {}, 'no required properties: an empty object')
})
