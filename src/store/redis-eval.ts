import type { Cluster, Redis } from 'ioredis'
import { digest } from '../hash.js'

export type Arg = string | number

/** A Lua script by its SHA-1, for EVALSHA. */
export interface Script {
  readonly lua: string
  readonly sha: string
  /** How many of the arguments are keys (they come first). */
  readonly keys: number
}

export function script(lua: string, keys = 1): Script {
  return { lua, keys, sha: digest('sha1', lua, 'hex') }
}

/** Scripts by name, made once. */
export function scripts<N extends string>(sources: Record<N, string>, keys = 1): Record<N, Script> {
  return Object.fromEntries(Object.entries<string>(sources).map(([name, lua]) => [name, script(lua, keys)])) as Record<N, Script>
}

/** What a node answers to EVALSHA of a script it does not have (after a start, a failover, SCRIPT FLUSH). */
export const isNoScript = (err: unknown): boolean => err instanceof Error && err.message.startsWith('NOSCRIPT')

/**
 * Run `s` on the node of its keys' slot: EVALSHA, and EVAL (which caches it there) when the node
 * does not have it yet. Not ioredis' defineCommand: that copies every defined script onto each
 * pipeline it makes, and auto-pipelining makes one per batch of commands, about a microsecond per
 * request with this project's thirty-odd scripts, for nothing. What the driver throws or rejects
 * with passes through `fail` (a store's own errors, for instance).
 */
export function evalScript(client: Redis | Cluster, s: Script, args: readonly Arg[], fail: (err: unknown) => unknown = (err) => err): Promise<unknown> {
  let sent: Promise<unknown>
  try {
    sent = client.evalsha(s.sha, s.keys, ...args)
  } catch (err) {
    return Promise.reject(fail(err))
  }
  // One handler on the EVALSHA, which a store sends for every call of every request.
  return sent.then(undefined, (err: unknown) => {
    if (!isNoScript(err)) throw fail(err)
    try {
      return client.eval(s.lua, s.keys, ...args).then(undefined, (again: unknown) => {
        throw fail(again)
      })
    } catch (again) {
      throw fail(again)
    }
  })
}
