import { readFileSync } from 'node:fs'
import { Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { parseApiKeys, type ApiKey } from '../auth/api-keys.js'
import { ConfigurationError } from '../errors.js'
import { tokenUrlProblem, type TokenExchangeSpec } from './token-exchange.js'
import type { UpstreamSpec } from './upstream.js'

/** One upstream to serve: where it is mounted (`''`: the root) and how to reach it. */
export interface Served {
  name: string
  /** `/{name}` with `--config`; the root otherwise. */
  prefix: string | undefined
  spec: UpstreamSpec
  /** `/ready` is 503 while it is down (default true; `"required": false` in the config). */
  required: boolean
  /** `--task-after-ms` / `"taskAfterMs"`, `--max-open-rounds` / `"maxOpenRounds"`, `--timeout-ms` / `"timeoutMs"`. */
  tuning: Tuning
}

/** What `mcp-pure-http gateway <args>` asks for: the upstreams, and the `--api-key`s clients may use. */
export interface GatewayArgs {
  served: Served[]
  apiKeys: ApiKey[]
}

export interface Tuning {
  taskAfterMs?: number
  maxOpenRounds?: number
  /** The upstream request deadline (see `UpstreamOptions.requestTimeoutMs`). */
  requestTimeoutMs?: number
}

export const USAGE = `Usage:
  mcp-pure-http demo                                  the demo server (what npm start runs)
  mcp-pure-http dev [server-file]                     restarted on change, readable logs (npm run dev)
  mcp-pure-http gateway -- <command> [args...]        serve a stdio MCP server
  mcp-pure-http gateway --url <http(s)://host/mcp> [--header 'Name: value']... [--forward-authorization]
                                                      serve a Streamable HTTP MCP server
  mcp-pure-http gateway --config <file.json>          serve each of { "mcpServers": { name: ... } } under /name
Gateway options: --task-after-ms <ms> (a call still running then becomes a task; default 5000),
  --max-open-rounds <n> (calls of one client waiting for its answers; default 16),
  --timeout-ms <ms> (an upstream request silent this long fails with 504; progress restarts it;
  default 60000; 0: none),
  --api-key <principal:key[:scope1 scope2]> (repeatable; as MCP_API_KEYS, which a shared machine's
  process list does not show: prefer MCP_API_KEYS_FILE).
HOST, PORT and every MCP_* variable apply as for the demo.`

const Env = Type.Record(Type.String(), Type.String())
const common = {
  required: Type.Optional(Type.Boolean()),
  taskAfterMs: Type.Optional(Type.Integer({ minimum: 0 })),
  maxOpenRounds: Type.Optional(Type.Integer({ minimum: 1 })),
  timeoutMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_000_000_000 }))
}
const Text = Type.String({ minLength: 1 })
const TokenExchange = Type.Object(
  { tokenUrl: Text, clientId: Text, clientSecret: Text, audience: Type.Optional(Text), resource: Type.Optional(Text), scope: Type.Optional(Text) },
  { additionalProperties: false }
)
const Entry = Type.Union([
  Type.Object({
    command: Type.String({ minLength: 1 }),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(Env),
    cwd: Type.Optional(Type.String()),
    type: Type.Optional(Type.Literal('stdio')),
    ...common
  }),
  Type.Object({
    url: Type.String({ pattern: '^https?://' }),
    headers: Type.Optional(Env),
    forwardAuthorization: Type.Optional(Type.Boolean()),
    tokenExchange: Type.Optional(TokenExchange),
    type: Type.Optional(Type.Union([Type.Literal('http'), Type.Literal('streamable-http')])),
    ...common
  })
])
// Names become a path segment: a name outside the pattern is refused, not served under an odd URL.
const ConfigFile = Type.Object({
  mcpServers: Type.Record(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }), Entry, { additionalProperties: false })
})

const fail = (message: string): never => {
  throw new ConfigurationError(`${message}\n\n${USAGE}`)
}

/**
 * The upstreams `mcp-pure-http gateway <args>` names, and its API keys. `${VAR}` in a config file's
 * `env` and `headers` values is taken from the gateway's environment, so that secrets stay out of the file.
 */
export function parseGatewayArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): GatewayArgs {
  const apiKeys: ApiKey[] = []
  return { served: parseServed(argv, env, apiKeys), apiKeys }
}

function parseServed(argv: readonly string[], env: NodeJS.ProcessEnv, apiKeys: ApiKey[]): Served[] {
  const dash = argv.indexOf('--')
  const flags = dash === -1 ? argv : argv.slice(0, dash)
  const command = dash === -1 ? [] : argv.slice(dash + 1)
  let url: string | undefined
  let config: string | undefined
  let forward = false
  const tuning: Tuning = {}
  const headers: Record<string, string> = {}
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!
    if (flag === '--forward-authorization') {
      forward = true
      continue
    }
    const value = flags[++i] ?? fail(`${flag} needs a value`)
    if (flag === '--url') url = value
    else if (flag === '--task-after-ms') tuning.taskAfterMs = count(flag, value, 0)
    else if (flag === '--max-open-rounds') tuning.maxOpenRounds = count(flag, value, 1)
    else if (flag === '--timeout-ms') tuning.requestTimeoutMs = count(flag, value, 0, 2_000_000_000)
    else if (flag === '--config') config = value
    else if (flag === '--api-key') apiKeys.push(...parseApiKeys(value, '--api-key'))
    else if (flag === '--header') {
      const colon = value.indexOf(':')
      if (colon < 1) fail(`--header "${value}" is not "Name: value"`)
      headers[value.slice(0, colon).trim()] = value.slice(colon + 1).trim()
    } else fail(`Unknown option ${flag}`)
  }
  const given = [command.length > 0, url !== undefined, config !== undefined].filter(Boolean).length
  if (given !== 1) fail('Give exactly one of: -- <command> [args...], --url <url>, --config <file>')
  if (forward && url === undefined) fail('--forward-authorization applies to --url only (in a config file: "forwardAuthorization": true)')
  if (config !== undefined) return fromConfig(config, env, tuning)
  if (url !== undefined) {
    if (!/^https?:\/\//.test(url)) fail(`--url ${url} is not an http(s) URL`)
    const spec = forward ? { url, headers, forwardAuthorization: true } : { url, headers }
    return [{ name: new URL(url).host, prefix: undefined, spec, required: true, tuning }]
  }
  return [{ name: command[0]!, prefix: undefined, spec: { command: command[0]!, args: command.slice(1) }, required: true, tuning }]
}

function count(flag: string, value: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value)
  if (Number.isSafeInteger(n) && n >= min && n <= max) return n
  return fail(`${flag} ${value} is not an integer ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}`)
}

function fromConfig(path: string, env: NodeJS.ProcessEnv, flags: Tuning): Served[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
  } catch (err) {
    fail(`--config ${path}: ${(err as Error).message}`)
  }
  const problem = Value.Errors(ConfigFile, parsed).First()
  if (problem !== undefined) fail(`--config ${path}: ${problem.path || '/'}: ${problem.message}`)
  const servers = Object.entries((parsed as { mcpServers: Record<string, Record<string, unknown>> }).mcpServers)
  if (servers.length === 0) fail(`--config ${path}: mcpServers is empty`)
  return servers.map(([name, entry]) => {
    const required = entry.required !== false
    // An entry's own values win over the command line's.
    const tuning: Tuning = { ...flags }
    if (entry.taskAfterMs !== undefined) tuning.taskAfterMs = entry.taskAfterMs as number
    if (entry.maxOpenRounds !== undefined) tuning.maxOpenRounds = entry.maxOpenRounds as number
    if (entry.timeoutMs !== undefined) tuning.requestTimeoutMs = entry.timeoutMs as number
    const spec: UpstreamSpec =
      typeof entry.url === 'string'
        ? {
            url: entry.url,
            headers: expand(entry.headers as Record<string, string> | undefined, env, `${name}.headers`),
            forwardAuthorization: entry.forwardAuthorization === true,
            ...exchangeOf(entry, env, `${name}.tokenExchange`)
          }
        : {
            command: entry.command as string,
            args: (entry.args as string[] | undefined) ?? [],
            env: expand(entry.env as Record<string, string> | undefined, env, `${name}.env`),
            ...(entry.cwd === undefined ? {} : { cwd: entry.cwd as string })
          }
    return { name, prefix: `/${name}`, spec, required, tuning }
  })
}

/** An entry's `tokenExchange`, its values expanded as `headers`' are; never with `forwardAuthorization`. */
function exchangeOf(entry: Record<string, unknown>, env: NodeJS.ProcessEnv, where: string): { tokenExchange?: TokenExchangeSpec } {
  if (entry.tokenExchange === undefined) return {}
  if (entry.forwardAuthorization === true) fail(`${where}: give forwardAuthorization or tokenExchange, not both (one sends the caller's own token upstream, the other one made for the upstream)`)
  const spec = expand(entry.tokenExchange as Record<string, string>, env, where) as unknown as TokenExchangeSpec
  const problem = tokenUrlProblem(spec.tokenUrl)
  return problem === undefined ? { tokenExchange: spec } : fail(`${where}.tokenUrl ${problem}`)
}

function expand(values: Record<string, string> | undefined, env: NodeJS.ProcessEnv, where: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(values ?? {})) {
    out[k] = v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? fail(`${where}.${k}: \${${name}} is not set`))
  }
  return out
}
