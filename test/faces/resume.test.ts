import t from 'tap'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { McpServer } from '../../src/core/mcp-server.js'
import type { Principal } from '../../src/core/request-context.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { encodeJsonHeader } from '../../src/headers.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import { resumable } from '../../src/mrtr/resume.js'
import { build, call, tamper } from '../helpers/helper.js'

const numbers = '/resources/demo%3A%2F%2Fnumbers'
const read = (app: FastifyInstance, token?: string, headers: Record<string, string> = {}) =>
  call(app, { url: numbers, headers: token === undefined ? headers : { ...headers, 'mcp-meta': encodeJsonHeader({ resumeToken: token }) } })

t.test('a large resource read in parts, following nextResumeToken to the end', async (t) => {
  const { app } = await build(t)
  const lines: string[] = []
  let token: string | undefined
  let parts = 0
  do {
    const res = await read(app, token)
    t.equal(res.status, 200)
    lines.push(...res.body.contents[0].text.split('\n'))
    token = res.body._meta?.nextResumeToken
    parts++
  } while (token !== undefined && parts < 20)
  t.equal(parts, 5)
  t.equal(lines.length, 10_000)
  t.same([lines[0], lines[9999]], ['line 1', 'line 10000'])
})

t.test('tokens are stable, sealed and bound', async (t) => {
  const who = async (request: FastifyRequest): Promise<Principal> => ({ id: String(request.headers['x-user'] ?? 'alice'), scopes: [], anonymous: false })
  const { app } = await build(t, { authenticate: who })
  const first = await read(app)
  const token = first.body._meta.nextResumeToken as string
  t.match(token, /^eyJ[\w-]+\.\.[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWE, like requestState')
  const a = await read(app, token)
  const b = await read(app, token)
  t.equal(a.body.contents[0].text, b.body.contents[0].text, 'the same token resumes the same step: a retried resume is safe')
  t.match(a.body.contents[0].text, /^line 2001\n/)
  const refused = [
    await read(app, token, { 'x-user': 'mallory' }),
    await read(app, tamper(token)),
    await call(app, { url: '/resources/demo%3A%2F%2Freadme', headers: { 'mcp-meta': encodeJsonHeader({ resumeToken: token }) } })
  ]
  for (const res of refused) t.same([res.status, res.body], [400, { code: -32602, message: 'Invalid or expired resumeToken' }])
  const notString = await call(app, { url: numbers, headers: { 'mcp-meta': '{"resumeToken":5}' } })
  t.same([notString.status, notString.body.message], [400, '_meta.resumeToken must be a string'])
})

t.test('long work split across requests by maxRequestMs; the arguments may not change', async (t) => {
  const { app } = await build(t, { mcp: createDemoServer({ maxRequestMs: 1 }) })
  const call1 = (body: Record<string, unknown>) => call(app, { method: 'POST', url: '/tools/long_sum/calls', payload: body })
  let res = await call1({ arguments: { n: 20_000_000 } })
  let parts = 1
  const first = res.body._meta?.nextResumeToken
  t.type(first, 'string', 'the first part did not finish in 1 ms')
  t.match(res.body.content[0].text, /^Summed \d+ of 20000000; resume to go on\.$/)
  while (res.body._meta?.nextResumeToken !== undefined && parts < 1000) {
    res = await call1({ arguments: { n: 20_000_000 }, _meta: { resumeToken: res.body._meta.nextResumeToken } })
    parts++
  }
  t.same(res.body.structuredContent, { sum: 200_000_010_000_000 })
  t.equal(res.body._meta, undefined, 'the final result carries no token')
  t.ok(parts > 1)
  const moved = await call1({ arguments: { n: 10 }, _meta: { resumeToken: first } })
  t.same([moved.status, moved.body.message], [400, 'Invalid or expired resumeToken'])
})

t.test('no token on an error result; a requestState is not a resume token', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'fails_partly' }, () => resumable({ content: [{ type: 'text' as const, text: 'broke' }], isError: true }, 1))
  mcp.tool({ name: 'asks' }, () => inputRequired({ state: 1 }))
  const { app } = await build(t, { mcp })
  const failed = await call(app, { method: 'POST', url: '/tools/fails_partly/calls', payload: {} })
  t.same(failed.body, { content: [{ type: 'text', text: 'broke' }], isError: true, resultType: 'complete' })
  const state = (await call(app, { method: 'POST', url: '/tools/asks/calls', payload: {} })).body.requestState
  const swapped = await call(app, { method: 'POST', url: '/tools/asks/calls', payload: { _meta: { resumeToken: state } } })
  t.same([swapped.status, swapped.body.message], [400, 'Invalid or expired resumeToken'])
})
