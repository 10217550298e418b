import t from 'tap'
import { cli, run } from '../helpers/cli-run.js'
import { execFileSync, spawn } from 'node:child_process'
import { PureHttpClient, sleep } from '../../src/client/client.js'
import { Type } from '@sinclair/typebox'
import { elicit } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { liveDemo } from '../helpers/client-harness.js'
import { DEMO_TOOLS } from '../helpers/helper.js'
import { prerequisite } from '../helpers/prerequisites.js'

t.test('the CLI without a terminal: lists, calls, prompts, reads, tasks, JSON output', async (t) => {
  const live = await liveDemo(t, { mcp: createDemoServer({ taskStepMs: 150 }) })
  live.mcp.tool({ name: 'picture' }, () => ({ content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }, { type: 'text', text: 'a dot' }] }))
  live.mcp.tool({ name: 'broken' }, () => {
    throw new Error('it broke')
  })
  live.mcp.resource({ uri: 'x:bytes', name: 'bytes', mimeType: 'application/octet-stream' }, () => new Uint8Array([1, 2, 3]))
  const url = ['--url', live.url]
  const tools = await run([...url, 'tools'])
  t.equal(tools.code, 0)
  t.match(tools.stdout, /^echo {2}Returns the text it is given\.$/m)
  const toolsJson = await run([...url, 'tools', '--json'])
  t.same(JSON.parse(toolsJson.stdout).map((x: { name: string }) => x.name), [...DEMO_TOOLS, 'picture', 'broken'])

  const add = await run([...url, 'call', 'add', '--arg', 'a=2', '--arg', 'b=40'])
  t.same([add.code, add.stdout], [0, '{"sum":42}\n'])
  const echo = await run([...url, 'call', 'echo', '--json', '{"text":"hi there"}', '--json'])
  t.same(JSON.parse(echo.stdout).content, [{ type: 'text', text: 'hi there' }])
  const word = await run([...url, 'call', 'echo', '--arg', 'text=plain words'])
  t.equal(word.stdout, 'plain words\n', 'a value that is not JSON is a string')
  const task = await run([...url, 'call', 'slow_compute', '--arg', 'n=3'])
  t.same([task.code, task.stdout], [0, '{"sum":6}\n'], 'a task, waited for (no spinner without a terminal)')
  const toolError = await run([...url, 'call', 'broken'])
  t.same([toolError.code, toolError.stdout], [1, 'it broke\n'], 'a tool error: exit 1')

  const prompts = await run([...url, 'prompts'])
  t.match(prompts.stdout, /^greeting {2}A friendly greeting for someone\.$/m)
  const prompt = await run([...url, 'prompt', 'greeting', '--arg', 'name=Ada'])
  t.equal(prompt.stdout, '[user] Please write a short, warm greeting for Ada.\n')
  const promptJson = await run([...url, '--json', 'prompt', 'greeting', '--arg', 'name=Ada'])
  t.equal(JSON.parse(promptJson.stdout).messages[0].role, 'user')
  const resources = await run([...url, 'resources'])
  t.match(resources.stdout, /^demo:\/\/readme {2}readme$/m)
  t.match(resources.stdout, /^demo:\/\/items\/\{id\} {2}item \(template\)$/m)
  t.same(Object.keys(JSON.parse((await run([...url, 'resources', '--json'])).stdout)), ['resources', 'resourceTemplates'])
  t.equal((await run([...url, 'call', 'picture'])).stdout, '(image)\na dot\n')
  t.equal((await run([...url, 'read', 'x:bytes'])).stdout, '(binary, 4 base64 characters)\n')
  const item = await run([...url, 'read', 'demo://items/2'])
  t.equal(item.stdout, '{"id":2,"name":"banana"}\n')
  const numbers = await run([...url, 'read', 'demo://numbers'])
  t.equal(numbers.stdout.trim().split('\n').length, 10_000, 'resume tokens followed')

  const client = new PureHttpClient({ url: live.url })
  const created = await client.send('POST', '/tools/slow_compute/calls', {
    body: { arguments: { n: 100 }, _meta: client.meta() }
  })
  const id = created.body.taskId as string
  t.match((await run([...url, 'tasks', 'get', id])).stdout, new RegExp(`^${id} {2}working`))
  t.equal((await run([...url, 'tasks', 'cancel', id])).stdout, `Cancelled ${id}\n`)
  t.equal(JSON.parse((await run([...url, '--json', 'tasks', 'get', id])).stdout).status, 'cancelled')

  const legacy = await run([...url, '--protocol-version', '2025-11-25', 'call', 'echo', '--arg', 'text=old'])
  t.same([legacy.code, legacy.stdout], [0, 'old\n'], 'legacy era: initialize first')
})

t.test('the CLI reports errors with a non-zero exit', async (t) => {
  const live = await liveDemo(t)
  const url = ['--url', live.url]
  const asks = await run([...url, 'call', 'get_weather'])
  t.equal(asks.code, 1)
  t.match(asks.stderr, 'mcp-http: The server asks: "Which location?", but stdin is not a terminal')
  const unknown = await run([...url, 'call', 'nope'])
  t.same([unknown.code, unknown.stderr], [1, 'mcp-http: Unknown tool: nope (HTTP 404, code -32602)\n'])
  const failed = await run([...url, 'call', 'failing_job'])
  t.match(failed, { code: 1, stderr: /The job could not find its input data \(HTTP 200, code -32602\)/ })
  const down = await run(['--url', 'http://127.0.0.1:9', 'tools'])
  t.match(down, { code: 1, stderr: /^mcp-http: fetch failed/ })
  for (const [args, message] of [
    [[], 'Usage: mcp-http'],
    [['frobnicate'], 'Unknown command: frobnicate'],
    [['call'], 'Missing argument: call <tool>'],
    [['call', 'add', '--arg', 'novalue'], '--arg takes key=value, not novalue'],
    [['tasks', 'poke', 'x'], 'Unknown tasks subcommand: poke (get or cancel)']
  ] as const) {
    const res = await run([...url, ...args])
    t.equal(res.code, 2, args.join(' '))
    t.match(res.stderr + res.stdout, message)
    t.match(res.stderr + res.stdout, 'Usage: mcp-http')
  }
  const help = await run(['--help'])
  t.same([help.code, help.stdout.split('\n')[0]], [0, 'Usage: mcp-http [options] <command>'])
})

t.test('watch prints notifications until interrupted', async (t) => {
  const live = await liveDemo(t)
  const child = spawn(process.execPath, [cli, '--url', live.url, 'watch', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  // The demo's one anonymous connection, subscribed by a 2025-11-25 client (2026-07-28 has no subscribe).
  const client = new PureHttpClient({ url: live.url, protocolVersion: '2025-11-25' })
  await client.subscribe('demo://items/3')
  await live.mcp.resourceUpdated('demo://items/3')
  for (let i = 0; i < 200 && stdout === ''; i++) await sleep(25)
  t.same(JSON.parse(stdout), { method: 'notifications/resources/updated', params: { uri: 'demo://items/3' } })
  child.kill('SIGINT')
  t.equal(await exited, 0)
  const human = spawn(process.execPath, [cli, '--url', live.url, 'watch'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let text = ''
  human.stdout.on('data', (c: Buffer) => (text += c.toString()))
  const done = new Promise<number | null>((resolve) => human.on('exit', (code) => resolve(code)))
  await live.mcp.resourceUpdated('demo://items/3')
  for (let i = 0; i < 200 && text === ''; i++) await sleep(25)
  t.equal(text, 'notifications/resources/updated {"uri":"demo://items/3"}\n')
  human.kill('SIGTERM')
  t.equal(await done, 0)
})

t.test('watch <uri>: the updates of that resource, by a listen stream (2026-07-28) or a subscription (2025)', async (t) => {
  const live = await liveDemo(t)
  for (const version of ['2026-07-28', '2025-11-25']) {
    const child = spawn(process.execPath, [cli, '--url', live.url, '--protocol-version', version, 'watch', 'demo://items/4', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    const listening = version === '2026-07-28'
    // Subscribed (or listening) once the server has said so: then an update reaches it.
    for (let i = 0; i < 400; i++) {
      if (listening ? stdout.includes('acknowledged') : (await live.mcp.store.connections.subscriptions('anonymous')).includes('demo://items/4')) break
      await sleep(25)
    }
    await live.mcp.resourceUpdated('demo://items/4')
    for (let i = 0; i < 400 && !stdout.includes('resources/updated'); i++) await sleep(25)
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { method: string; params: any })
    if (listening) t.match(lines[0], { method: 'notifications/subscriptions/acknowledged', params: { notifications: { resourceSubscriptions: ['demo://items/4'] } } }, 'which URIs the server took')
    t.match(lines.at(-1), { method: 'notifications/resources/updated', params: { uri: 'demo://items/4' } }, version)
    child.kill('SIGINT')
    t.equal(await exited, 0)
  }
})

t.test('interactive elicitation in a real terminal (tmux)', async (t) => {
  const live = await liveDemo(t)
  const answers = resolver({
    name: 'answers',
    resolve: () =>
      elicit(
        'Fill in the form',
        Type.Object({
          color: Type.Unsafe<string>({ type: 'string', enum: ['red', 'blue'], description: 'The colour' }),
          count: Type.Integer(),
          ok: Type.Boolean(),
          note: Type.Optional(Type.String({ title: 'Note' }))
        })
      )
  })
  live.mcp.tool({ name: 'form', resolvers: { answers } }, (_a, ctx) => JSON.stringify(ctx.resolved.answers))
  prerequisite('tmux')
  const socket = `mcp-cli-test-${process.pid}`
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' })
  t.teardown(() => {
    try {
      tmux('kill-server')
    } catch {
      // already gone
    }
  })
  const screen = () => tmux('capture-pane', '-p', '-t', 'cli')
  const waitFor = async (pattern: RegExp) => {
    for (let i = 0; i < 400; i++) {
      const text = screen()
      if (pattern.test(text)) return text
      await sleep(25)
    }
    return screen()
  }
  const command = `${process.execPath} ${cli} --url ${live.url} call get_weather; echo EXIT=$?; sleep 60`
  tmux('new-session', '-d', '-s', 'cli', '-x', '160', '-y', '40', command)
  t.match(await waitFor(/^ {2}location:/m), /Which location\?\n {2}\(:decline to refuse, :cancel or Ctrl-D to dismiss\)\n {2}location:/)
  tmux('send-keys', '-t', 'cli', 'Oslo', 'Enter')
  const after = await waitFor(/EXIT=\d/)
  t.match(after, /Weather in Oslo: .+°C/)
  t.match(after, /EXIT=0/)

  // Every kind of field: an enum and a number re-asked until valid, a boolean, an optional one skipped.
  const form = `${process.execPath} ${cli} --url ${live.url} call form; echo EXIT=$?; sleep 60`
  tmux('new-session', '-d', '-s', 'form', '-x', '160', '-y', '40', form)
  const formScreen = () => tmux('capture-pane', '-p', '-t', 'form')
  const formWait = async (pattern: RegExp) => {
    let shot = ''
    for (let i = 0; i < 400 && !pattern.test(shot); i++) {
      await sleep(25)
      shot = formScreen()
    }
    return shot
  }
  await formWait(/color \(The colour; one of red, blue\):/)
  tmux('send-keys', '-t', 'form', 'green', 'Enter')
  t.match(await formWait(/color must be one of red, blue\.\n {2}color/), /color must be one of red, blue\.\n {2}color/, 'the refusal says the rule')
  tmux('send-keys', '-t', 'form', 'red', 'Enter')
  await formWait(/count:/)
  tmux('send-keys', '-t', 'form', 'many', 'Enter')
  t.match(await formWait(/count must be a number\.\n {2}count:/), /count must be a number\./)
  tmux('send-keys', '-t', 'form', '3.5', 'Enter')
  t.match(await formWait(/count must be a whole number\.\n {2}count:/), /count must be a whole number\./)
  tmux('send-keys', '-t', 'form', '3', 'Enter')
  await formWait(/ok \(y\/n\):/)
  tmux('send-keys', '-t', 'form', 'maybe', 'Enter')
  t.match(await formWait(/ok answer y or n\.\n {2}ok/), /ok answer y or n\./)
  tmux('send-keys', '-t', 'form', 'y', 'Enter')
  await formWait(/Note \[optional\]:/)
  tmux('send-keys', '-t', 'form', 'Enter')
  const filled = await formWait(/EXIT=\d/)
  t.match(filled, /\{"color":"red","count":3,"ok":true\}/)
  t.match(filled, /EXIT=0/)

  // A task in a terminal shows a spinner line, cleared at the end.
  const task = `${process.execPath} ${cli} --url ${live.url} call slow_compute --arg n=3; echo EXIT=$?; sleep 60`
  tmux('new-session', '-d', '-s', 'task', '-x', '160', '-y', '40', task)
  let shot = ''
  for (let i = 0; i < 400 && !/EXIT=\d/.test(shot); i++) {
    await sleep(25)
    shot = tmux('capture-pane', '-p', '-t', 'task')
  }
  t.match(shot, /^\{"sum":6\}$/m)
  t.match(shot, /EXIT=0/)
})
