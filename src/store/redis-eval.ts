import type { Cluster, Redis } from 'ioredis'
import { digest } from '../hash.js'

export type Arg = string | number

/** A Lua script by its SHA-1, for EVALSHA; and its function, when the store's library has it (FCALL). */
export interface Script {
  readonly lua: string
  readonly sha: string
  /** How many of the arguments are keys (they come first). */
  readonly keys: number
  /** Its name in the store's function library (`redis-functions.ts`). */
  readonly fn?: string
}

export function script(lua: string, keys = 1): Script {
  return { lua, keys, sha: digest('sha1', lua, 'hex') }
}

/** What a node answers to EVALSHA of a script it does not have (after a start, a failover, SCRIPT FLUSH). */
export const isNoScript = (err: unknown): boolean => err instanceof Error && err.message.startsWith('NOSCRIPT')

/** What a node answers to FCALL of a function it does not have (a new or flushed node: `FUNCTION FLUSH`). */
export const isNoFunction = (err: unknown): boolean => err instanceof Error && err.message === 'ERR Function not found'

/** A client, or a pipeline: where a step is sent or queued (what each returns, the caller knows). */
interface Sender {
  evalsha(sha: string, keys: number, ...args: Arg[]): unknown
  eval(lua: string, keys: number, ...args: Arg[]): unknown
  fcall(fn: string, keys: number, ...args: Arg[]): unknown
}

/**
 * How a store runs its steps, chosen once when it connects (`RedisCore`): by EVALSHA of scripts,
 * or by FCALL of the functions of its library.
 */
export interface Way {
  readonly by: 'scripts' | 'functions'
  /** Send `s` on a client (a promise) or queue it on a pipeline; `again` after the node answered {@link Way.missing}. */
  send(on: Sender, s: Script, args: readonly Arg[], again: boolean): unknown
  /** The node does not have the step. */
  missing(err: unknown): boolean
  /** Before it is sent again: make the node have it (scripts: nothing, EVAL carries the script). */
  heal?(): Promise<void>
}

/** EVALSHA; EVAL (which caches the script on that node) when the node does not have it yet. */
export const BY_SCRIPTS: Way = {
  by: 'scripts',
  send: (on, s, args, again) => (again ? on.eval(s.lua, s.keys, ...args) : on.evalsha(s.sha, s.keys, ...args)),
  missing: isNoScript
}

/** FCALL of each step's function; `heal` loads the library where it is missing. */
export function functionsWay(heal: () => Promise<void>): Way {
  return { by: 'functions', send: (on, s, args) => on.fcall(s.fn!, s.keys, ...args), missing: isNoFunction, heal }
}

/**
 * Run `s` on the node of its keys' slot, the `way` chosen: the one place that sends a step. Once
 * more when the node does not have it (after a start, a failover, a flush). Not ioredis'
 * defineCommand: that copies every defined script onto each pipeline it makes, and auto-pipelining
 * makes one per batch of commands, about a microsecond per request with this project's thirty-odd
 * scripts, for nothing. What the driver throws or rejects with passes through `fail` (a store's own
 * errors, for instance).
 */
export function runStep(client: Redis | Cluster, way: Way, s: Script, args: readonly Arg[], fail: (err: unknown) => unknown = (err) => err): Promise<unknown> {
  const again = (): Promise<unknown> => {
    try {
      return (way.send(client, s, args, true) as Promise<unknown>).then(undefined, (err: unknown) => {
        throw fail(err)
      })
    } catch (err) {
      throw fail(err)
    }
  }
  let sent: Promise<unknown>
  try {
    sent = way.send(client, s, args, false) as Promise<unknown>
  } catch (err) {
    return Promise.reject(fail(err))
  }
  // One handler on the call, which a store sends for every step of every request.
  return sent.then(undefined, (err: unknown) => {
    if (!way.missing(err)) throw fail(err)
    if (way.heal === undefined) return again()
    return way.heal().then(again, (failed: unknown) => {
      throw fail(failed)
    })
  })
}

/** {@link runStep} by scripts (the webhook store's). */
export const evalScript = (client: Redis | Cluster, s: Script, args: readonly Arg[], fail?: (err: unknown) => unknown): Promise<unknown> =>
  runStep(client, BY_SCRIPTS, s, args, fail)
