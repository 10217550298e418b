/** Definitions a script may start with, by the name(s) they define: dependencies first. */
import { KIND, PART, TAG_AT } from './redis-keys.js'
export type Definitions = readonly (readonly [name: string, lua: string])[]

/**
 * What every script may start with (see `redis-scripts.ts`): the store's configuration (written into
 * the script by {@link configure}), Redis' clock, and the names derived from `KEYS[1]`. Redis runs a
 * script's definitions on every call (a closure made, a string cut: about 31 ns each), so {@link lua}
 * keeps only those the script names. Redis Functions (7.0) keep definitions between calls: in a
 * store's function library (`redis-functions.ts`) those that read nothing of a call are made once.
 */
const PRELUDE: Definitions = [
  ['P', 'local P = __PREFIX__'],
  ['CONN_TTL', 'local CONN_TTL = __CONN_TTL__'],
  ['MAX_CONNS', 'local MAX_CONNS = __MAX_CONNS__'],
  ['PUB', 'local PUB = __PUB__'],
  ['K', 'local K = KEYS[1]'],
  ['A', 'local function A(i) return ARGV[i] end'],
  [
    'nowms',
    `local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`
  ],
  // The hash tag of K with its braces ("{h}" of "P c:{h}"): names built on it share K's slot.
  ['TAG', `local TAG = string.sub(K, #P + ${TAG_AT})`],
  // Wake whoever waits for `name` on the tag's shard channel, on any instance.
  ['wake', `local function wake(name) redis.call(PUB, P .. '${KIND.wake}' .. TAG, name) end`],
  // A connection's keys other than its notification queue (which has its own TTL) live CONN_TTL
  // past its last use. For scripts whose K is a connection's hash `P c:{h}`.
  [
    'keepalive',
    `local function keepalive()
  for _, k in ipairs({ K, K .. '${PART.subs}', K .. '${PART.requestOrder}', K .. '${PART.requestMessages}', K .. '${PART.requestStates}' }) do redis.call('PEXPIRE', k, CONN_TTL) end
end`
  ]
]

/**
 * Where a body's early part ends: the definitions only the rest names are made here instead of at
 * the top, so that a call that returns before this line makes none of them (see {@link lua}).
 */
export const LATER = '-- (what follows is defined here)'

/**
 * A step in both of the forms a store may run it by (see `redis-eval.ts`): a script, and the body of
 * a function in the store's library (`redis-functions.ts`).
 */
export interface Lua {
  /** The whole script: every definition it names, then the body (EVAL, EVALSHA). */
  readonly script: string
  /**
   * The same as a function's body: only the definitions that read the call's keys or arguments
   * (`K`, `A`, and those made from them) are made in it, as in the script; `shared` are made once,
   * when the library loads, and the function reads them as upvalues.
   */
  readonly body: string
  /** The definitions `body` names that read nothing of a call, dependencies first, by name. */
  readonly shared: Definitions
  /** It only reads (see {@link readsOnly}). */
  readonly noWrites?: true
  /** It runs when Redis is full (see {@link freesMemory}). */
  readonly allowOom?: true
}

/**
 * A step that writes nothing: its function is registered `no-writes` (Redis then refuses a write in
 * it, and runs it even when full, and FCALL_RO could send it to a replica). Its script is unchanged.
 */
export const readsOnly = (l: Lua): Lua => ({ ...l, noWrites: true })

/**
 * A step that mostly frees memory (an acknowledgement, a delete): its function is registered
 * `allow-oom`, so that it runs when Redis is full (`maxmemory`, `noeviction`), as its script would
 * (a script runs until its first write that may grow memory; a function without the flag is
 * refused whole, and what would make room could not). Its script is unchanged.
 */
export const freesMemory = (l: Lua): Lua => ({ ...l, allowOom: true })

/**
 * A script: the definitions `body` uses (and theirs), from the prelude and then `own` (a family of
 * scripts' shared helpers, which may use the prelude's), then `body`; with a {@link LATER} line in
 * it, those that only the part after that line names are made there. A name may be several (`q|qb`:
 * one definition of both). `A(n)` with a literal n (the script's n-th argument) is written as
 * `ARGV[n]`: no call per argument read. The function form ({@link Lua}) is the same text less the
 * definitions it shares with the library.
 */
export const lua = (body: string, own: Definitions = []): Lua => {
  const text = body.replace(/\bA\((\d+)\)/g, (_, n: string) => `ARGV[${n}]`)
  const all = [...PRELUDE, ...own]
  const local = perCall(all)
  const at = text.indexOf(LATER)
  const early = at === -1 ? [] : named(all, text.slice(0, at))
  const rest = named(all, text).filter((d) => !early.some(([name]) => name === d[0]))
  const form = (keep: (d: Definition) => boolean): string => {
    const lines = (ds: Definitions) => ds.filter(keep).map(([, definition]) => definition)
    if (at === -1) return `${lines(rest).join('\n')}\n${text}`
    return `${[...lines(early), ''].join('\n')}${text.slice(0, at)}${lines(rest).join('\n')}${text.slice(at + LATER.length)}`
  }
  return { script: form(() => true), body: form((d) => local.has(d[1])), shared: [...early, ...rest].filter((d) => !local.has(d[1])) }
}

type Definition = Definitions[number]

/** The definitions of `all` made per call: those that read KEYS or ARGV, or name one that does. */
function perCall(all: Definitions): Set<string> {
  const local = new Set<string>()
  for (const [, definition] of all) {
    const names = [...all].filter(([, d]) => local.has(d)).map(([name]) => name)
    if (/\b(?:KEYS|ARGV)\b/.test(definition) || (names.length > 0 && new RegExp(`\\b(?:${names.join('|')})\\b`).test(definition))) local.add(definition)
  }
  return local
}

/** The definitions of `all` that `text` names, with those they name, in their order. */
function named(all: Definitions, text: string): Definition[] {
  let scanned = text
  const kept: Definition[] = []
  for (let i = all.length - 1; i >= 0; i--) {
    const [name, definition] = all[i]!
    // A function is used where it is called (a comment may say "A ..."), a value wherever it is named.
    const used = definition.startsWith('local function') ? `\\b(?:${name})\\(` : `\\b(?:${name})\\b`
    if (!new RegExp(used).test(scanned)) continue
    kept.unshift(all[i]!)
    scanned += definition
  }
  return kept
}

/** What a store writes into its scripts instead of sending it with every call. */
export interface ScriptConfig {
  prefix: string
  connectionTtlMs: number
  maxConnections: number
  publish: 'PUBLISH' | 'SPUBLISH'
}

/**
 * A script as one store runs it: its configuration written in as Lua literals. These were once four
 * arguments sent with every call (and parsed by every call); as constants they cost nothing per
 * call, and each configuration is its own script (its own SHA-1), loaded once per Redis node.
 */
export function configure(text: string, c: ScriptConfig): string {
  return text
    .replaceAll('__PREFIX__', luaString(c.prefix))
    .replaceAll('__CONN_TTL__', luaNumber(c.connectionTtlMs, 'connectionTtlMs'))
    .replaceAll('__MAX_CONNS__', luaNumber(c.maxConnections, 'maxConnections'))
    .replaceAll('__PUB__', luaString(c.publish))
}

/** Any string as a Lua literal: every byte as a decimal escape, so no quote or newline can end it. */
export function luaString(s: string): string {
  let out = "'"
  for (const b of Buffer.from(s, 'utf8')) out += `\\${b}`
  return `${out}'`
}

function luaNumber(n: number, name: string): string {
  if (!Number.isSafeInteger(n)) throw new Error(`RedisStore: ${name} must be an integer, not ${n}`)
  return String(n)
}
