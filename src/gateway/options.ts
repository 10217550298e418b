import { readFileSync } from 'node:fs'
import { Type, type Static, type TSchema } from '@sinclair/typebox'
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
  /** Served under `/{name}` on its own (`"mount": false`: only through virtual servers). */
  mounted: boolean
}

/**
 * A virtual server of the config file (`virtualServers`): entries of several upstreams under one
 * mount, `/{name}`. Every key is `server/entry` (a tool's or prompt's name, a resource's URI, a
 * template's URI template); `include` and `exclude` are patterns of such keys where `*` stands for
 * any run of characters.
 */
export interface VirtualSpec {
  name: string
  prefix: string
  include: string[]
  exclude: string[]
  /** A tool's or prompt's name here, by key. */
  rename: Record<string, string>
  /** Every tool's and prompt's name here, from `{server}` and `{name}` (default: the name, `{server}_{name}` where names clash). */
  names: string | undefined
  descriptions: Record<string, string>
  /** The scopes a tool needs here, by key (as a tool's `scopes`). */
  scopes: Record<string, string[]>
}

/** What `mcp-pure-http gateway <args>` asks for: the upstreams, and the `--api-key`s clients may use. */
export interface GatewayArgs {
  served: Served[]
  apiKeys: ApiKey[]
  virtual: VirtualSpec[]
  /** `--config`'s file: read again on SIGHUP and when it changes. */
  configFile?: string
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
  mcp-pure-http gateway --url <http(s)://host/mcp> [--header 'Name: value']... [--forward-authorization] [--sse]
                                                      serve a Streamable HTTP MCP server (--sse: one that
                                                      speaks the older HTTP+SSE transport, at its /sse URL)
  mcp-pure-http gateway --config <file.json>          serve each of { "mcpServers": { name: ... } } under /name,
                                                      and each of "virtualServers" (entries of several) under its name
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
  timeoutMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_000_000_000 })),
  mount: Type.Optional(Type.Boolean())
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
    type: Type.Optional(Type.Union([Type.Literal('http'), Type.Literal('streamable-http'), Type.Literal('sse')])),
    ...common
  })
])
const Key = Type.String({ pattern: '^[^/]+/.+$', maxLength: 4096 })
const Keyed = <T extends TSchema>(value: T) => Type.Record(Type.String({ maxLength: 4096 }), value)
const Virtual = Type.Object(
  {
    include: Type.Array(Key, { minItems: 1, maxItems: 1000 }),
    exclude: Type.Optional(Type.Array(Key, { maxItems: 1000 })),
    rename: Type.Optional(Keyed(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$' }))),
    names: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    descriptions: Type.Optional(Keyed(Type.String({ maxLength: 10_000 }))),
    scopes: Type.Optional(Keyed(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 64 })))
  },
  { additionalProperties: false }
)
// Names become a path segment: a name outside the pattern is refused, not served under an odd URL.
const Name = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' })
const ConfigFile = Type.Object({
  mcpServers: Type.Record(Name, Entry, { additionalProperties: false }),
  virtualServers: Type.Optional(Type.Record(Name, Virtual, { additionalProperties: false }))
})

const fail = (message: string): never => {
  throw new ConfigurationError(`${message}\n\n${USAGE}`)
}

/**
 * The upstreams `mcp-pure-http gateway <args>` names, and its API keys. `${VAR}` in a config file's
 * `env` and `headers` values is taken from the gateway's environment, so that secrets stay out of the file.
 */
export function parseGatewayArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): GatewayArgs {
  const args: GatewayArgs = { served: [], apiKeys: [], virtual: [] }
  args.served = parseServed(argv, env, args)
  return args
}

function parseServed(argv: readonly string[], env: NodeJS.ProcessEnv, args: GatewayArgs): Served[] {
  const { apiKeys, virtual } = args
  const dash = argv.indexOf('--')
  const flags = dash === -1 ? argv : argv.slice(0, dash)
  const command = dash === -1 ? [] : argv.slice(dash + 1)
  let url: string | undefined
  let config: string | undefined
  let forward = false
  let sse = false
  const tuning: Tuning = {}
  const headers: Record<string, string> = {}
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!
    if (flag === '--forward-authorization') {
      forward = true
      continue
    }
    if (flag === '--sse') {
      sse = true
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
  if (sse && url === undefined) fail('--sse applies to --url only (in a config file: "type": "sse")')
  if (config !== undefined) {
    args.configFile = config
    return fromConfig(config, env, tuning, virtual)
  }
  if (url !== undefined) {
    if (!/^https?:\/\//.test(url)) fail(`--url ${url} is not an http(s) URL`)
    const spec = { url, headers, ...(forward ? { forwardAuthorization: true } : {}), ...(sse ? { sse: true } : {}) }
    return [{ name: new URL(url).host, prefix: undefined, spec, required: true, tuning, mounted: true }]
  }
  return [{ name: command[0]!, prefix: undefined, spec: { command: command[0]!, args: command.slice(1) }, required: true, tuning, mounted: true }]
}

function count(flag: string, value: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value)
  if (Number.isSafeInteger(n) && n >= min && n <= max) return n
  return fail(`${flag} ${value} is not an integer ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}`)
}

function fromConfig(path: string, env: NodeJS.ProcessEnv, flags: Tuning, virtual: VirtualSpec[]): Served[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
  } catch (err) {
    fail(`--config ${path}: ${(err as Error).message}`)
  }
  const problem = Value.Errors(ConfigFile, parsed).First()
  if (problem !== undefined) fail(`--config ${path}: ${problem.path || '/'}: ${problem.message}`)
  const file = parsed as Static<typeof ConfigFile>
  const servers = Object.entries(file.mcpServers as Record<string, Record<string, unknown>>)
  if (servers.length === 0) fail(`--config ${path}: mcpServers is empty`)
  virtual.push(...virtualServers(file, `--config ${path}`))
  const used = new Set(virtual.flatMap((v) => v.include.map((p) => p.slice(0, p.indexOf('/')))))
  for (const [name, entry] of servers) {
    if (entry.mount === false && !used.has(name) && !used.has('*')) fail(`--config ${path}: mcpServers.${name} has "mount": false and no virtual server includes it`)
  }
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
            ...(entry.type === 'sse' ? { sse: true } : {}),
            ...exchangeOf(entry, env, `${name}.tokenExchange`)
          }
        : {
            command: entry.command as string,
            args: (entry.args as string[] | undefined) ?? [],
            env: expand(entry.env as Record<string, string> | undefined, env, `${name}.env`),
            ...(entry.cwd === undefined ? {} : { cwd: entry.cwd as string })
          }
    return { name, prefix: `/${name}`, spec, required, tuning, mounted: entry.mount !== false }
  })
}

/** The file's virtual servers, their keys' servers checked against `mcpServers` and their names against its. */
function virtualServers(file: Static<typeof ConfigFile>, where: string): VirtualSpec[] {
  return Object.entries(file.virtualServers ?? {}).map(([name, v]) => {
    const at = `${where}: virtualServers.${name}`
    if (Object.hasOwn(file.mcpServers, name)) fail(`${at}: the name of an mcpServers entry (both would be /${name})`)
    const keys = [...v.include, ...(v.exclude ?? []), ...Object.keys({ ...v.rename, ...v.descriptions, ...v.scopes })]
    for (const key of keys) {
      const server = key.slice(0, key.indexOf('/'))
      if (server !== '*' && !Object.hasOwn(file.mcpServers, server)) fail(`${at}: ${key} names no server of mcpServers (keys are server/entry)`)
    }
    for (const key of Object.keys({ ...v.rename, ...v.descriptions })) if (key.includes('*')) fail(`${at}: ${key}: rename and descriptions take one entry's key, not a pattern`)
    if (v.names !== undefined && !v.names.includes('{name}')) fail(`${at}: names must contain {name}`)
    return {
      name,
      prefix: `/${name}`,
      include: v.include,
      exclude: v.exclude ?? [],
      rename: v.rename ?? {},
      names: v.names,
      descriptions: v.descriptions ?? {},
      scopes: v.scopes ?? {}
    }
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
