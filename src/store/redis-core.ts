import type { Cluster, Redis } from 'ioredis'
import { digest } from '../hash.js'
import { NotReplicated } from './store-errors.js'
import { RedisBus } from './redis-bus.js'
import { connect, type RedisTarget } from './redis-connect.js'
import { SCRIPTS, type ScriptName } from './redis-scripts.js'
import type { StoreLimits } from './types.js'

export const sha1 = (s: string): string => digest('sha1', s, 'hex')

type Arg = string | number
type Command = (key: string, ...args: Arg[]) => Promise<unknown>

/** Durability of acknowledged writes: WAIT for this many replicas, at most this long. */
export interface WaitOptions {
  replicas: number
  timeoutMs: number
}

/**
 * What the parts of a {@link RedisStore} share: the connections, the key names (see
 * `redis-scripts.ts` for their slots), and how scripts run.
 */
export class RedisCore {
  readonly client: Redis | Cluster
  readonly sub: Redis | Cluster
  readonly bus: RedisBus
  readonly prefix: string
  readonly limits: StoreLimits
  readonly answerTtlMs: number
  readonly #header: [string, number, number, string]
  readonly #wait: WaitOptions | undefined

  constructor(target: RedisTarget, prefix: string, limits: StoreLimits, o: { connectionTtlMs: number; answerTtlMs: number; sweepMs: number; wait?: WaitOptions }) {
    // A brace in the prefix would become the hash tag of every key: one slot for everything.
    if (/[{}]/.test(prefix)) throw new Error(`RedisStore: the prefix must not contain { or }: ${JSON.stringify(prefix)}`)
    const c = connect(target)
    this.client = c.client
    this.sub = c.sub
    this.prefix = prefix
    this.limits = limits
    this.answerTtlMs = o.answerTtlMs
    this.#wait = o.wait !== undefined && o.wait.replicas > 0 ? o.wait : undefined
    this.#header = [prefix, o.connectionTtlMs, limits.maxConnections, c.sharded ? 'SPUBLISH' : 'PUBLISH']
    // Loaded once per connection and run by EVALSHA (ioredis falls back to EVAL once per node).
    for (const [name, lua] of Object.entries(SCRIPTS)) c.client.defineCommand(name, { numberOfKeys: 1, lua })
    c.client.on('error', () => undefined)
    c.sub.on('error', () => undefined)
    this.bus = new RedisBus(c.client, c.sub, c.sharded, prefix, o.sweepMs)
  }

  /** Run a script on the slot of `key`. */
  run(name: ScriptName, key: string, ...args: Arg[]): Promise<unknown> {
    const command = (this.client as unknown as Record<ScriptName, Command>)[name]
    return command.call(this.client, key, ...this.#header, ...args)
  }

  /**
   * Run a script whose effect a client is told about: with the durability option, the reply waits
   * until that many replicas have the write (WAIT on the same connection, in the same pipeline),
   * and a write they did not confirm in time is a 503: it may be lost in a failover.
   */
  async write(name: ScriptName, key: string, ...args: Arg[]): Promise<unknown> {
    if (this.#wait === undefined) return this.run(name, key, ...args)
    const { replicas, timeoutMs } = this.#wait
    const pipeline = this.client.pipeline() as unknown as Record<ScriptName, Command> & { wait(n: number, ms: number): unknown; exec(): Promise<[Error | null, unknown][]> }
    pipeline[name](key, ...this.#header, ...args)
    pipeline.wait(replicas, timeoutMs)
    const [[err, result], [waitErr, acked]] = (await pipeline.exec()) as [[Error | null, unknown], [Error | null, number]]
    if (err !== null) throw err
    if (waitErr !== null || acked < replicas) {
      throw new NotReplicated(`The store did not confirm the write on ${replicas} replica(s) within ${timeoutMs} ms`)
    }
    return result
  }

  /** A logical connection's hash `P c:{h}`; its other keys append to it. */
  conn(owner: string): string {
    return `${this.prefix}c:{${sha1(owner)}}`
  }

  /** The connections subscribed to a URI, on the URI's slot. */
  uri(uri: string): string {
    return `${this.prefix}u:{${sha1(uri)}}`
  }

  /** A registry key (one slot for the deployment): `conns`, `sess`, `tasks`, `idem`. */
  registry(name: string): string {
    return `${this.prefix}{g}:${name}`
  }

  /**
   * A record of an owner on its own slot (`t` task, `i` idempotency record, `a` answer): its key,
   * its index member, and the wake-up channel of that slot.
   */
  record(kind: 't' | 'i', owner: string, id: string): { key: string; member: string; channel: string } {
    const member = `${sha1(owner)}:${id}`
    return { key: `${this.prefix}${kind}:{${member}}`, member, channel: `${this.prefix}w:{${member}}` }
  }

  /** A use of a connection: it becomes the most recently used; those it pushes out are forgotten. */
  async use(owner: string): Promise<void> {
    const gone = (await this.run('mcpRegister', this.registry('conns'), owner)) as string[]
    await Promise.all(gone.map((o) => this.forget(o)))
  }

  /** Drop everything a connection holds, and take it out of the subscribers of its URIs. */
  async forget(owner: string): Promise<void> {
    const subs = (await this.run('mcpForget', this.conn(owner))) as string[]
    await Promise.all(subs.map((uri) => this.run('mcpSubscriber', this.uri(uri), owner, 0)))
  }
}
