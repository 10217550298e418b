#!/usr/bin/env node
import { createInterface } from 'node:readline/promises'
import { parseArgs } from 'node:util'
import { McpHttpError, PureHttpClient, type Json } from '../src/client/client.js'

const USAGE = `Usage: mcp-http [options] <command>

Commands:
  tools                          list the tools
  call <tool> [--arg k=v]... [--json '{...}']
                                 call a tool (values of --arg are JSON when they parse, else strings)
  prompts                        list the prompts
  prompt <name> [--arg k=v]...   get a prompt
  resources                      list the resources and templates
  read <uri>                     read a resource
  tasks get <id> | tasks cancel <id>
  watch                          print notifications (and answer server requests) until Ctrl-C

Options:
  --url <url>                    the server (default http://127.0.0.1:3000)
  --token <token>                a bearer token
  --protocol-version <version>   default 2026-07-28; 2025-* initializes first
  --json                         machine output (JSON); --json followed by an object gives call arguments
  -h, --help`

/** Thrown for usage errors: exit code 2. */
class UsageError extends Error {}

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
      'protocol-version': { type: 'string' },
      json: { type: 'boolean', default: false },
      input: { type: 'string' },
      arg: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  const [command, ...rest] = positionals
  if (values.help || command === undefined) {
    out(USAGE)
    return values.help ? 0 : 2
  }
  const json = values.json
  const client = new PureHttpClient({
    url: values.url,
    token: values.token,
    protocolVersion: values['protocol-version'],
    clientInfo: { name: 'mcp-http', version: '0.1.0' },
    handlers: { elicit: (params) => askInTerminal(params) }
  })
  if (client.legacy) await client.initialize()
  const print = (value: unknown, human: () => string) => out(json ? JSON.stringify(value, null, 2) : human())

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
      const callArgs = { ...input, ...keyValues(values.arg, true) }
      const legacyPoll = new AbortController()
      const polling = client.legacy ? client.poll({ signal: legacyPoll.signal, intervalMs: 200 }) : undefined
      const spinner = progress()
      try {
        const result = await client.callTool(name, callArgs, { onTask: spinner.update })
        spinner.done()
        print(result, () => contentText(result.content))
        return result.isError === true ? 1 : 0
      } finally {
        legacyPoll.abort()
        await polling
      }
    }
    case 'prompt': {
      const result = await client.getPrompt(need(rest[0], 'prompt <name>'), keyValues(values.arg, false) as Record<string, string>)
      print(result, () => (result.messages as Json[]).map((m) => `[${m.role}] ${contentText([m.content])}`).join('\n'))
      return 0
    }
    case 'read': {
      const result = await client.readResource(need(rest[0], 'read <uri>'))
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
      await client.poll({
        signal: stop.signal,
        intervalMs: 500,
        onNotification: (n) => void out(json ? JSON.stringify(n) : [n.method, JSON.stringify(n.params)].filter(Boolean).join(' '))
      })
      return 0
    }
    default:
      throw new UsageError(`Unknown command: ${command}`)
  }
}

function need(value: string | undefined, what: string): string {
  if (value === undefined) throw new UsageError(`Missing argument: ${what}`)
  return value
}

/** `k=v` pairs; with `typed`, a value that parses as JSON is taken as JSON (`n=5`, `ok=true`). */
function keyValues(pairs: string[], typed: boolean): Json {
  const result: Json = {}
  for (const pair of pairs) {
    const eq = pair.indexOf('=')
    if (eq < 1) throw new UsageError(`--arg takes key=value, not ${pair}`)
    const value = pair.slice(eq + 1)
    result[pair.slice(0, eq)] = typed ? jsonOr(value) : value
  }
  return result
}

function jsonOr(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function contentText(content: Json[]): string {
  return content.map((c) => (c.type === 'text' ? c.text : `(${c.type})`)).join('\n')
}

/** A spinner line for tasks, on a terminal only. */
function progress(): { update: (task: Json) => void; done: () => void } {
  if (process.stdout.isTTY !== true) return { update: () => {}, done: () => {} }
  const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏'
  let i = 0
  return {
    update: (task) => process.stdout.write(`\r\x1b[2K${frames[i++ % frames.length]} task ${task.taskId}: ${task.status}${task.statusMessage ? ` (${task.statusMessage})` : ''}`),
    done: () => process.stdout.write('\r\x1b[2K')
  }
}

/** Elicitation as a terminal form: one question per property of the requested schema. */
async function askInTerminal(params: Json): Promise<Json> {
  if (process.stdin.isTTY !== true) {
    throw new McpHttpError(`The server asks: "${params.message}", but stdin is not a terminal; pass the values as arguments or run mcp-http in a terminal`, -32600, 0)
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  try {
    process.stderr.write(`${params.message}\n`)
    const schema = params.requestedSchema as { properties: Record<string, Json>; required?: string[] }
    const content: Json = {}
    for (const [key, prop] of Object.entries(schema.properties)) {
      const required = schema.required?.includes(key) === true
      const hint = [prop.description, prop.enum ? `one of ${(prop.enum as string[]).join(', ')}` : prop.type === 'boolean' ? 'y/n' : undefined].filter(Boolean).join('; ')
      for (;;) {
        const raw = (await rl.question(`  ${prop.title ?? key}${hint ? ` (${hint})` : ''}${required ? '' : ' [optional]'}: `)).trim()
        if (raw === '' && !required) break
        const value = prop.type === 'boolean' ? /^(y|yes|true)$/i.test(raw) : prop.type === 'integer' || prop.type === 'number' ? Number(raw) : raw
        if (raw === '' || (typeof value === 'number' && Number.isNaN(value)) || (prop.enum && !(prop.enum as unknown[]).includes(value))) {
          process.stderr.write('  Please enter a valid value.\n')
          continue
        }
        content[key] = value
        break
      }
    }
    return { action: 'accept', content }
  } finally {
    rl.close()
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`mcp-http: ${err.message}\n\n${USAGE}\n`)
      process.exitCode = 2
      return
    }
    const e = err as Error
    const detail = err instanceof McpHttpError && err.status > 0 ? ` (HTTP ${err.status}, code ${err.code})` : ''
    process.stderr.write(`mcp-http: ${e.message}${detail}\n`)
    process.exitCode = 1
  }
)
