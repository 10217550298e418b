import t from 'tap'
import { run, tmux } from '../helpers/cli-run.js'
import { PureHttpClient, sleep } from '../../src/client/client.js'
import { sample } from '../../src/mrtr/questions.js'
import { resolver } from '../../src/mrtr/resolvers.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { liveDemo, type Live } from '../helpers/client-harness.js'

/** A tool (and a resource) that run until their request is aborted. */
function addWaiting(live: Live) {
  const aborted: string[] = []
  const started: string[] = []
  const wait = async (name: string, ctx: { signal: AbortSignal; requestId: string }) => {
    started.push(name)
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }))
    aborted.push(ctx.requestId)
  }
  live.mcp.tool({ name: 'wait' }, async (_a, ctx) => ((await wait('tool', ctx), 'stopped')))
  live.mcp.resource({ uri: 'x:slow', name: 'slow' }, (async (_uri: string, ctx: { signal: AbortSignal; requestId: string }) => ((await wait('read', ctx), 'late'))) as never)
  return { aborted, started }
}

const cancelledIds = (live: Live) =>
  live.seen.flatMap((s) => (Array.isArray(s.body) ? (s.body as { method: string; params: { requestId: string } }[]) : []).filter((n) => n.method === 'notifications/cancelled').map((n) => n.params.requestId))

t.test('Ctrl-C cancels a running task, a long call, a read and a form on the server, and exits 130', async (t) => {
  const live = await liveDemo(t, { mcp: createDemoServer({ taskStepMs: 200 }) })
  const waiting = addWaiting(live)
  const term = tmux(t)

  term.start('task', `--url ${live.url} call slow_compute --arg n=100`)
  const running = await term.wait('task', /task (\S+): working/)
  const taskId = /task (\S+): working/.exec(running)![1]!
  term.keys('task', 'C-c')
  const after = await term.wait('task', /EXIT=\d+/)
  t.match(after, `mcp-http: interrupted; task ${taskId} was cancelled on the server`)
  t.match(after, /EXIT=130/)
  const task = await new PureHttpClient({ url: live.url }).getTask(taskId)
  t.same([task.status, task.statusMessage], ['cancelled', 'Cancelled by the client'], 'cancelled through the task route')

  term.start('call', `--url ${live.url} call wait`)
  while (!waiting.started.includes('tool')) await sleep(25)
  term.keys('call', 'C-c')
  t.match(await term.wait('call', /EXIT=\d+/), /mcp-http: interrupted; the call was cancelled on the server\n+EXIT=130/)
  while (waiting.aborted.length < 1 || !cancelledIds(live).includes(waiting.aborted[0]!)) await sleep(25)
  t.pass('the tool stopped, and notifications/cancelled named its Mcp-Request-Id')

  term.start('read', `--url ${live.url} read x:slow`)
  while (!waiting.started.includes('read')) await sleep(25)
  term.keys('read', 'C-c')
  t.match(await term.wait('read', /EXIT=\d+/), /mcp-http: interrupted; the request was cancelled on the server\n+EXIT=130/)
  while (waiting.aborted.length < 2 || !cancelledIds(live).includes(waiting.aborted[1]!)) await sleep(25)
  t.pass('the read stopped too')

  // In a form the terminal is raw: Ctrl-C reaches readline, which interrupts the same way.
  term.start('form', `--url ${live.url} call get_weather`)
  await term.wait('form', /location:/)
  term.keys('form', 'C-c')
  t.match(await term.wait('form', /EXIT=\d+/), /mcp-http: interrupted; the call was cancelled on the server\n+EXIT=130/)
})

t.test('sampling: typed in a terminal, a clear error without one; roots from --roots', async (t) => {
  const live = await liveDemo(t)
  const model = resolver({
    name: 'model',
    resolve: () => sample({ systemPrompt: 'Be brief.', messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }], maxTokens: 5 })
  })
  live.mcp.tool({ name: 'llm', resolvers: { model } }, (_a, ctx) => {
    const reply = ctx.resolved.model
    return `${reply.model}: ${(reply.content as { text: string }).text}`
  })
  const term = tmux(t)
  term.start('llm', `--url ${live.url} call llm`)
  const asked = await term.wait('llm', /Model reply:/)
  t.match(asked, 'The server asks for a model reply (sampling/createMessage).\n  [system] Be brief.\n  [user] Say hi\n  Model reply:')
  term.keys('llm', 'hello there', 'Enter')
  const answered = await term.wait('llm', /EXIT=\d+/)
  t.match(answered, 'mcp-http (typed in the terminal): hello there')
  t.match(answered, /EXIT=0/)

  const noTerminal = await run(['--url', live.url, 'call', 'llm'])
  t.equal(noTerminal.code, 1)
  t.match(noTerminal.stderr, 'mcp-http: The server asks for a model reply (sampling), but stdin is not a terminal to type one')

  const roots = await run(['--url', live.url, '--roots', 'file:///a,file:///b', 'read', 'demo://roots'])
  t.same([roots.code, JSON.parse(roots.stdout)], [0, [{ uri: 'file:///a' }, { uri: 'file:///b' }]])
  const noRoots = await run(['--url', live.url, 'read', 'demo://roots'])
  t.match(noRoots, { code: 1, stderr: /HTTP 400, code -32021/ }, 'without --roots the capability is not declared')
  const missing = await run(['--url', live.url, 'prompt', 'nope'])
  t.match(missing, { code: 1, stderr: /^mcp-http: .*nope/ })
})
