#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { McpHttpError, PureHttpClient, type ClientHandlers, type Json } from '../src/client/client.js'
import { UsageError, dpopKeyFile, hint, keyValues, need } from './args.js'
import { askInTerminal } from './form.js'
import { contentText, interrupt, progress, sampleInTerminal } from './terminal.js'
import { callWithWebhook } from './webhook-call.js'

const USAGE = `Usage: mcp-http [options] <command>

Commands:
  tools                          list the tools
  call <tool> [--arg k=v]... [--json '{...}']
                                 call a tool (--arg values typed by its input schema: text for a
                                 string field, else JSON when they parse)
  prompts                        list the prompts
  prompt <name> [--arg k=v]...   get a prompt
  resources                      list the resources and templates
  read <uri>                     read a resource
  tasks get <id> | tasks cancel <id>
                                 (an id that begins with '-': put -- before it)
  watch [<uri>...]               print notifications (and answer server requests) until Ctrl-C,
                                 with the updates of these resources

Ctrl-C during a call, prompt or read cancels it on the server (a task through its cancel route)
and exits with 130.

Options:
  --url <url>                    the server (default http://127.0.0.1:3000)
  --token <token>                a bearer token
  --dpop-key <file>              a private JWK (JSON) the token is DPoP-bound to: requests then send
                                 "Authorization: DPoP <token>" and a fresh proof (RFC 9449)
  --protocol-version <version>   default 2026-07-28; 2025-* initializes first
  --roots <uri,uri...>           the roots this client shares (answers roots/list)
  --webhook <port>               call: receive progress and the task outcome on 127.0.0.1:<port>
                                 (a webhook, deleted on exit) instead of polling
  --json                         machine output (JSON); --json followed by an object gives call arguments
  -h, --help`

/** Thrown once Ctrl-C cancelled the command's request on the server: exit code 130. */
class Interrupted extends Error {}

const out = (text: string) => process.stdout.write(`${text}\n`)

async function main(argv: string[]): Promise<number> {
  // `--json {...}` is the arguments of `call`; `--json` alone asks for JSON output.
  const args = argv.flatMap((a, i) => (a === '--json' && argv[i + 1]?.trimStart().startsWith('{') ? ['--input'] : [a]))
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: 'string', default: process.env.MCP_URL ?? 'http://127.0.0.1:3000' },
      token: { type: 'string', default: process.env.MCP_TOKEN },
      'dpop-key': { type: 'string', default: process.env.MCP_DPOP_KEY_FILE },
      'protocol-version': { type: 'string' },
      json: { type: 'boolean', default: false },
      input: { type: 'string' },
      arg: { type: 'string', multiple: true, default: [] },
      roots: { type: 'string' },
      webhook: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  const [command, ...rest] = positionals
  if (values.help || command === undefined) {
    out(USAGE)
    return values.help ? 0 : 2
  }
  const json = values.json
  const handlers: ClientHandlers = { elicit: (params) => askInTerminal(params), sample: (params) => sampleInTerminal(params) }
  const roots = values.roots?.split(',').filter(Boolean).map((uri) => ({ uri }))
  if (roots !== undefined) handlers.listRoots = () => roots
  const dpopFile = values['dpop-key']
  const client = new PureHttpClient({
    url: values.url,
    token: values.token,
    ...(dpopFile === undefined ? {} : { dpop: dpopKeyFile(dpopFile, values.token) }),
    protocolVersion: values['protocol-version'],
    clientInfo: { name: 'mcp-http', version: '0.1.0' },
    handlers
  })
  if (client.legacy) await client.initialize()
  const print = (value: unknown, human: () => string) => out(json ? JSON.stringify(value, null, 2) : human())
  const signal = interrupt.signal
  if (['call', 'prompt', 'read'].includes(command)) process.once('SIGINT', () => interrupt.abort(new Error('Interrupted')))

  switch (command) {
    case 'tools': {
      const tools = await client.listTools()
      print(tools, () => tools.map((t) => [t.name, t.description].filter(Boolean).join('  ')).join('\n'))
      return 0
    }
    case 'prompts': {
      const prompts = await client.listPrompts()
      print(prompts, () => prompts.map((p) => [p.name, p.description].filter(Boolean).join('  ')).join('\n'))
      return 0
    }
    case 'resources': {
      const resources = await client.listResources()
      const templates = await client.listResourceTemplates()
      print({ resources, resourceTemplates: templates }, () =>
        [...resources.map((r) => `${r.uri}  ${r.name}`), ...templates.map((r) => `${r.uriTemplate}  ${r.name} (template)`)].join('\n')
      )
      return 0
    }
    case 'call': {
      const name = need(rest[0], 'call <tool>')
      const input = JSON.parse(values.input ?? '{}') as Json
      // The tool's input schema says which --arg values are text and which are JSON.
      const tool = values.arg.length === 0 ? undefined : (await client.listTools()).find((t) => t.name === name)
      const callArgs = { ...input, ...keyValues(values.arg, tool?.inputSchema ?? {}) }
      if (values.webhook !== undefined) {
        const port = Number(values.webhook)
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--webhook takes a port, not ${values.webhook}`)
        const result = await interruptible(callWithWebhook(client, name, callArgs, port, { signal, onEvent: (line) => void process.stderr.write(`${line}\n`) }))
        print(result, () => contentText(result.content))
        return result.isError === true ? 1 : 0
      }
      const legacyPoll = new AbortController()
      const polling = client.legacy ? client.poll({ signal: legacyPoll.signal, intervalMs: 200 }) : undefined
      const spinner = progress()
      let taskId: string | undefined
      const onTask = (task: Json) => (((taskId = task.taskId), spinner.update(task)))
      try {
        const result = await interruptible(client.callTool(name, callArgs, { onTask, signal }), () => ((spinner.done(), taskId === undefined ? 'the call was' : `task ${taskId} was`)))
        spinner.done()
        print(result, () => contentText(result.content))
        return result.isError === true ? 1 : 0
      } finally {
        legacyPoll.abort()
        await polling
      }
    }
    case 'prompt': {
      const result = await interruptible(client.getPrompt(need(rest[0], 'prompt <name>'), keyValues(values.arg) as Record<string, string>, { signal }))
      print(result, () => (result.messages as Json[]).map((m) => `[${m.role}] ${contentText([m.content])}`).join('\n'))
      return 0
    }
    case 'read': {
      const result = await interruptible(client.readResource(need(rest[0], 'read <uri>'), { signal }))
      print(result, () => (result.contents as Json[]).map((c) => c.text ?? `(binary, ${String(c.blob).length} base64 characters)`).join('\n'))
      return 0
    }
    case 'tasks': {
      const id = need(rest[1], 'tasks get|cancel <id>')
      if (rest[0] === 'get') {
        const task = await client.getTask(id)
        print(task, () => [task.taskId, task.status, task.statusMessage].filter(Boolean).join('  '))
        return 0
      }
      if (rest[0] === 'cancel') {
        await client.cancelTask(id)
        print({ taskId: id, cancelled: true }, () => `Cancelled ${id}`)
        return 0
      }
      throw new UsageError(`Unknown tasks subcommand: ${rest[0]} (get or cancel)`)
    }
    case 'watch': {
      const stop = new AbortController()
      process.once('SIGINT', () => stop.abort())
      process.once('SIGTERM', () => stop.abort())
      const onNotification = (n: Json) => void out(json ? JSON.stringify(n) : [n.method, JSON.stringify(n.params)].filter(Boolean).join(' '))
      const watching = [client.poll({ signal: stop.signal, intervalMs: 500, onNotification })]
      // Updates of these resources: subscribed for the connection (2025), or a listen stream of
      // this command's own (2026-07-28, which removed subscribe), printed beside the rest.
      if (rest.length > 0) {
        if (client.legacy) for (const uri of rest) await client.subscribe(uri)
        else watching.push(client.listen({ resourceSubscriptions: rest }, { signal: stop.signal, onNotification }))
      }
      await Promise.all(watching)
      return 0
    }
    default:
      throw new UsageError(`Unknown command: ${command}`)
  }
}

/** The result; `Interrupted` when Ctrl-C cancelled it (`what` names it: the request, the call, the task). */
async function interruptible(running: Promise<Json>, what: () => string = () => 'the request was'): Promise<Json> {
  try {
    return await running
  } catch (err) {
    throw interrupt.signal.aborted ? new Interrupted(`${what()} cancelled on the server`) : err
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    if (err instanceof Interrupted) {
      process.stderr.write(`mcp-http: interrupted; ${err.message}\n`)
      process.exitCode = 130
      return
    }
    if (err instanceof UsageError) {
      process.stderr.write(`mcp-http: ${err.message}\n\n${USAGE}\n`)
      process.exitCode = 2
      return
    }
    const e = err as Error
    const detail = err instanceof McpHttpError && err.status > 0 ? ` (HTTP ${err.status}, code ${err.code})` : ''
    process.stderr.write(`mcp-http: ${e.message}${detail}${hint(e as McpHttpError)}\n`)
    process.exitCode = 1
  }
)
