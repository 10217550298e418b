import { execFile } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { isTask, type CallToolResult, type CreateTaskResult, type GetPromptResult, type PureHttpClient, type ReadResourceResult, type Task, type Tool } from '../../src/client/index.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

// A module resolve hook (registered with --import, as Node runs ESM loaders) that fails the import as
// soon as anything under node_modules is resolved: the client entry must load no dependency at all,
// so certainly not Fastify. The package is imported by its own name, through `exports`.
function hooks(dir: string): string {
  writeFileSync(
    join(dir, 'hook.mjs'),
    `export async function resolve(spec, ctx, next) {
      const r = await next(spec, ctx)
      if (r.url.includes('/node_modules/')) throw new Error('dependency loaded: ' + r.url)
      return r
    }`
  )
  writeFileSync(join(dir, 'register.mjs'), 'import { register } from \'node:module\'\nregister(\'./hook.mjs\', import.meta.url)\n')
  return join(dir, 'register.mjs')
}

async function load(register: string, specifier: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = `const m = await import(${JSON.stringify(specifier)}); console.log(Object.keys(m).sort().join(','))`
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', register, '--input-type=module', '-e', script], { cwd: root })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

t.test('mcp-pure-http/client loads no dependency (no Fastify, no TypeBox)', async (t) => {
  const register = hooks(t.testdir())
  const client = await load(register, 'mcp-pure-http/client')
  t.equal(client.code, 0, client.stderr)
  t.same(client.stdout.trim().split(','), ['DpopProver', 'McpHttpError', 'PureHttpClient', 'PureHttpTransport', 'TASKS_EXTENSION', 'dpopKeyFromJwk', 'generateDpopKey', 'isTask', 'reasonText', 'sleep'])
  // The same hook on the server entry does see Fastify: the check above can fail.
  const server = await load(register, 'mcp-pure-http')
  t.not(server.code, 0)
  t.match(server.stderr, /dependency loaded: .*\/node_modules\//)
})

t.test('both entries ship their declarations where package.json says', async (t) => {
  const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as { exports: Record<string, { types?: string; default?: string }> }
  for (const entry of ['.', './client']) {
    const { types, default: main } = pkg.exports[entry]!
    t.ok(existsSync(join(root, types!)), `${entry} types: ${types}`)
    t.ok(existsSync(join(root, main!)), `${entry} code: ${main}`)
  }
})

// Compile-time checks, run by `npm run typecheck` (never called): the results are the schema types,
// so a result read the wrong way does not compile, and `@ts-expect-error` fails if they become `any`.
export async function typedResults(client: PureHttpClient): Promise<unknown[]> {
  const tools: Tool[] = await client.listTools()
  const result: CallToolResult = await client.callTool('echo', { text: 'hi' })
  const maybeTask = await client.callTool('slow_compute', { n: 1 }, { wait: false })
  const taskId: string | undefined = isTask(maybeTask) ? maybeTask.taskId : undefined
  const prompt: GetPromptResult = await client.getPrompt('greeting', { name: 'Ada' })
  const read: ReadResourceResult = await client.readResource('demo://readme')
  const task: Task = await client.getTask('t1')
  // @ts-expect-error content is an array of blocks, not a string
  const wrong: string = result.content
  // @ts-expect-error without wait: false a call never answers a task
  const notTask: CreateTaskResult = await client.callTool('echo')
  return [tools[0]?.inputSchema, taskId, prompt.messages, read.contents, task.status, wrong, notTask]
}
