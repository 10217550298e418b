import type { Cluster, Redis } from 'ioredis'
import { digest } from '../hash.js'
import type { Lua } from './redis-lua.js'

/**
 * The steps of a store as one Redis Functions library (Redis 7): the definitions that read nothing
 * of a call (the configuration, the clock, the ledger's helpers) are made once, when the library
 * loads, instead of on every call of every script; each step is a function, called by FCALL.
 */
export interface Library<N extends string> {
  /**
   * `mcp_pure_http_` and 12 hex digits of a hash of the code (configuration included): two versions
   * of the server, or two prefixes, sharing one Redis (a rolling deploy) each have their own library,
   * and loading one never replaces the other's. The same code is the same name: a second instance
   * finds it loaded.
   */
  readonly name: string
  readonly code: string
  /** Each step's function: `<library>_<step>` (function names are global in a Redis, not per library). */
  readonly functions: Record<N, string>
}

/**
 * The library of `steps`, written with the store's configuration (`configure`, from redis-lua.ts).
 * A step marked `noWrites` is registered with that flag (Redis refuses a write in it; FCALL_RO and
 * replicas may run it); one marked `allowOom` with `allow-oom` (it runs when Redis is full).
 */
export function library<N extends string>(steps: Record<N, Lua>, configure: (text: string) => string): Library<N> {
  const shared = new Map<string, string>()
  const registered: string[] = []
  for (const [name, step] of Object.entries<Lua>(steps)) {
    for (const [defines, definition] of step.shared) {
      const had = shared.get(defines)
      if (had !== undefined && had !== definition) throw new Error(`Two definitions of ${defines}: one library cannot hold both`)
      shared.set(defines, definition)
    }
    const flags = step.noWrites === true ? ", flags = { 'no-writes' }" : step.allowOom === true ? ", flags = { 'allow-oom' }" : ''
    registered.push(`redis.register_function{ function_name = '__LIB___${name}', callback = function(KEYS, ARGV)\n${step.body}\nend${flags} }`)
  }
  const code = configure([...shared.values(), ...registered].join('\n'))
  const name = `mcp_pure_http_${digest('sha1', code, 'hex').slice(0, 12)}`
  return {
    name,
    code: `#!lua name=${name}\n${code.replaceAll('__LIB__', name)}`,
    functions: Object.fromEntries(Object.keys(steps).map((step) => [step, `${name}_${step}`])) as Record<N, string>
  }
}

/**
 * Load the library on every master that lacks it (FUNCTION LIST, then FUNCTION LOAD): each master
 * of a cluster holds its own functions (its replicas get them from it). REPLACE: a node may get it
 * from another instance between the two; the same name is the same code, so either load is right.
 */
export async function loadLibrary(client: Redis | Cluster, lib: Library<string>): Promise<void> {
  // A cluster knows its masters once connected: the PING waits for that (or fails as commands do).
  if (client.isCluster) await client.ping()
  const nodes = client.isCluster ? (client as Cluster).nodes('master') : [client as Redis]
  await Promise.all(
    nodes.map(async (node) => {
      const listed = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', lib.name)) as unknown[]
      if (listed.length === 0) await node.call('FUNCTION', 'LOAD', 'REPLACE', lib.code)
    })
  )
}
