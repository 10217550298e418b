import type { Cluster, Redis } from 'ioredis'
import { NotReplicated, StoreError, StoreUnavailable } from './store-errors.js'
import { RedisBus } from './redis-bus.js'
import { connect, type RedisTarget } from './redis-connect.js'
import { SCRIPTS, type ScriptName } from './redis-scripts.js'
import { configure, type ScriptConfig } from './redis-lua.js'
import { REGISTRY, RedisKeys } from './redis-keys.js'
import { BY_SCRIPTS, functionsWay, runStep, script, type Arg, type Script, type Way } from './redis-eval.js'
import { library, loadLibrary, type Library } from './redis-functions.js'
import type { StoreLimits } from './types.js'

/** Durability of acknowledged writes: WAIT for this many replicas, at most this long. */
export interface WaitOptions {
  replicas: number
  timeoutMs: number
}

/**
 * What the parts of a {@link RedisStore} share: the connections, the key names (`redis-keys.ts`),
 * and how scripts run.
 */
export class RedisCore {
  readonly client: Redis | Cluster
  readonly sub: Redis | Cluster
  readonly bus: RedisBus
  readonly prefix: string
  /** Every key and channel name (see redis-keys.ts). */
  readonly keys: RedisKeys
  readonly limits: StoreLimits
  readonly answerTtlMs: number
  /** The most shards of each ledger (see `redis-ledger.ts`). */
  readonly ledgerShards: number
  /** The steps with this store's configuration written in: each script with its SHA-1, and its function (see runStep). */
  readonly #scripts: Record<ScriptName, Script>
  /** Their function library (Redis 7), unless functions are off. */
  readonly #library: Library<ScriptName> | undefined
  /** How steps run (FCALL or EVALSHA), once chosen: see {@link RedisCore.chosen}. */
  #way: Way | undefined
  #choosing: Promise<Way> | undefined
  #loading: Promise<void> | undefined
  readonly #wait: WaitOptions | undefined
  /** After a command timed out (Redis hangs), others fail at once until then rather than each wait. */
  #quietUntil = 0
  /** When this process last kept each polling connection alive (see {@link stillHere}), oldest first. */
  readonly #kept = new Map<string, number>()
  readonly #keepEveryMs: number
  /** {@link RedisCore.guard}'s error mapping, for {@link evalScript}. */
  readonly #fail = (err: unknown): unknown => this.#failure(err)

  constructor(
    target: RedisTarget,
    prefix: string,
    limits: StoreLimits,
    o: { connectionTtlMs: number; answerTtlMs: number; sweepMs: number; ledgerShards: number; wait?: WaitOptions; functions?: 'auto' | 'off' }
  ) {
    this.keys = new RedisKeys(prefix)
    const c = connect(target)
    this.client = c.client
    this.sub = c.sub
    this.prefix = prefix
    this.limits = limits
    this.answerTtlMs = o.answerTtlMs
    this.ledgerShards = o.ledgerShards
    this.#keepEveryMs = o.connectionTtlMs / 2
    this.#wait = o.wait !== undefined && o.wait.replicas > 0 ? o.wait : undefined
    const config: ScriptConfig = { prefix, connectionTtlMs: o.connectionTtlMs, maxConnections: limits.maxConnections, publish: c.sharded ? 'SPUBLISH' : 'PUBLISH' }
    this.#library = o.functions === 'off' ? undefined : library(SCRIPTS, (text) => configure(text, config))
    // Each script begins with its name, so that one sent whole (EVAL, after NOSCRIPT) says which it
    // is; an EVALSHA shows only the SHA-1, which scriptShas() maps back to the name.
    this.#scripts = Object.fromEntries(
      Object.entries(SCRIPTS).map(([name, text]) => {
        const s = script(`-- ${name}\n${configure(text.script, config)}`)
        return [name, this.#library === undefined ? s : { ...s, fn: this.#library.functions[name as ScriptName] }]
      })
    ) as Record<ScriptName, Script>
    c.client.on('error', () => undefined)
    c.sub.on('error', () => undefined)
    this.bus = new RedisBus(c.client, c.sub, c.sharded, this.keys, o.sweepMs)
    // Else chosen at the first step (or readiness ping), not here: on a Cluster a command sent now
    // opens one of ioredis' auto-pipelines, which runs only at the next turn of the event loop, and
    // a plugin that defines a command on this client in between (the rate limiter's) and calls it
    // before that turn (Fastify's inject does) finds it missing on that pipeline.
    if (this.#library === undefined) this.#way = BY_SCRIPTS
  }

  /**
   * How this store runs its steps, chosen once: by the functions of its library where Redis has
   * them (7.0 or later) and lets this user load them (FUNCTION LIST, then LOAD where it is missing,
   * on every master); else by scripts (Redis 6.2, an ACL without FUNCTION, a managed Redis that
   * refuses it). Redis not answering decides nothing: the next step asks again.
   */
  chosen(): Promise<Way> {
    if (this.#way !== undefined) return Promise.resolve(this.#way)
    this.#choosing ??= this.#load().then(
      () => (this.#way = functionsWay(() => this.#load())),
      (err: unknown) => {
        this.#choosing = undefined
        if (!refused(err)) throw err
        return (this.#way = BY_SCRIPTS)
      }
    )
    return this.#choosing
  }

  /** Load the library where it is missing; one load at a time, shared by the steps that found it missing. */
  #load(): Promise<void> {
    this.#loading ??= loadLibrary(this.client, this.#library!).finally(() => (this.#loading = undefined))
    return this.#loading
  }

  /** Which library this store calls (undefined while it runs scripts): for diagnostics. */
  async functionLibrary(): Promise<string | undefined> {
    return (await this.chosen()).by === 'functions' ? this.#library!.name : undefined
  }

  /** Each script's SHA-1 as this store runs it (its configuration is written into it). */
  scriptShas(): Record<ScriptName, string> {
    return Object.fromEntries(Object.entries<Script>(this.#scripts).map(([name, s]) => [name, s.sha])) as Record<ScriptName, string>
  }

  /** Run a step on the slot of `key` ({@link runStep}), with the guard's checks and errors. */
  run(name: ScriptName, key: string, ...args: Arg[]): Promise<unknown> {
    if (Date.now() < this.#quietUntil) return Promise.reject(new StoreUnavailable())
    const way = this.#way
    if (way !== undefined) return runStep(this.client, way, this.#scripts[name], [key, ...args], this.#fail)
    return this.guard(() => this.chosen()).then((w) => runStep(this.client, w, this.#scripts[name], [key, ...args], this.#fail))
  }

  /**
   * Send commands unless Redis just failed to answer, and turn what the driver throws into a
   * {@link StoreError} of ours (its words stay in `cause`, for the log): a store that does not
   * answer is a fast 503, never a 500 after a long wait nor driver text on the wire. While the
   * connection is being made again, commands wait in ioredis' offline queue, `commandTimeout` at
   * most: a failover shorter than that is not seen by clients.
   *
   * A promise chained, not an async function: every store call of every request goes through
   * here, and an async frame is one more generator and promise alive for each command in flight.
   */
  guard<T>(send: () => Promise<T>): Promise<T> {
    if (Date.now() < this.#quietUntil) return Promise.reject(new StoreUnavailable())
    let sent: Promise<T>
    try {
      sent = send()
    } catch (err) {
      return Promise.reject(this.#failure(err))
    }
    return sent.then(undefined, (err: unknown) => {
      throw this.#failure(err)
    })
  }

  #failure(err: unknown): unknown {
    // What ioredis rejects with is always an Error (our own errors pass through storeFailure as they are).
    if ((err as Error).message === 'Command timed out') this.#quietUntil = Date.now() + 1000
    return storeFailure(err)
  }

  /**
   * Run a script whose effect a client is told about: with the durability option, the reply waits
   * until that many replicas have the write (WAIT on the same connection, in the same pipeline),
   * and a write they did not confirm in time is a 503: it may be lost in a failover.
   */
  write(name: ScriptName, key: string, ...args: Arg[]): Promise<unknown> {
    // Not async: without WAIT, the script's own promise (an async function's would wrap it).
    return this.#wait === undefined ? this.run(name, key, ...args) : this.#writeReplicated(this.#wait, name, key, args)
  }

  async #writeReplicated({ replicas, timeoutMs }: WaitOptions, name: ScriptName, key: string, args: Arg[]): Promise<unknown> {
    const s = this.#scripts[name]
    const argv = [key, ...args]
    const way = await this.guard(() => this.chosen())
    const send = (again: boolean) => {
      const pipeline = this.client.pipeline()
      way.send(pipeline, s, argv, again)
      pipeline.wait(replicas, timeoutMs)
      return this.guard(async () => (await pipeline.exec()) as [[Error | null, unknown], [Error | null, number]])
    }
    let [[err, result], [waitErr, acked]] = await send(false)
    // Not on that node yet: EVAL it, or load the library there (no write happened, so none is repeated).
    if (way.missing(err)) {
      await this.guard(() => way.heal?.() ?? Promise.resolve())
      ;[[err, result], [waitErr, acked]] = await send(true)
    }
    if (err !== null) throw storeFailure(err)
    if (waitErr !== null || acked < replicas) {
      throw new NotReplicated(`The store did not confirm the write on ${replicas} replica(s) within ${timeoutMs} ms`)
    }
    return result
  }

  /** A use of a connection: it becomes the most recently used; those it pushes out are forgotten. */
  async use(owner: string): Promise<void> {
    const gone = (await this.run('mcpRegister', this.keys.registry(REGISTRY.connections), owner)) as string[]
    await Promise.all(gone.map((o) => this.forget(o)))
  }

  /**
   * A connection that only polls (`GET /notifications`, the GET /mcp stream) is in use, though it
   * writes nothing: once per half of the connection TTL, remembered in this process (as many as
   * the registry holds), its registry entry, its keys and its URIs' subscriber sets live a TTL
   * again. Undefined (no command) the other times: the poll itself stays two commands.
   */
  stillHere(owner: string): Promise<void> | undefined {
    const now = Date.now()
    const at = this.#kept.get(owner)
    if (at !== undefined && now - at < this.#keepEveryMs) return undefined
    this.#kept.delete(owner)
    this.#kept.set(owner, now)
    if (this.#kept.size > this.limits.maxConnections) this.#kept.delete(this.#kept.keys().next().value!)
    return this.#keepAlive(owner)
  }

  async #keepAlive(owner: string): Promise<void> {
    await this.use(owner)
    const subs = (await this.run('mcpKeepAlive', this.keys.conn(owner))) as string[]
    await Promise.all(subs.map((uri) => this.run('mcpSubscriber', this.keys.uri(uri), owner, 1)))
  }

  /** Drop everything a connection holds, and take it out of the subscribers of its URIs. */
  async forget(owner: string): Promise<void> {
    const subs = (await this.run('mcpForget', this.keys.conn(owner))) as string[]
    await Promise.all(subs.map((uri) => this.run('mcpSubscriber', this.keys.uri(uri), owner, 0)))
  }
}

/** Redis refusing for a while (out of memory, loading, failing over, a cluster slot down): come back shortly. */
const TRANSIENT = /^(OOM|LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|NOREPLICAS|MISCONF)\b/

/** Redis answered a command with a refusal of it (not a transient one): FUNCTION unknown, or not allowed. */
const refused = (err: unknown): boolean => (err as Error).name === 'ReplyError' && !TRANSIENT.test((err as Error).message)

/**
 * What the driver threw, as a store error: Redis not answering (a connection lost or refused, a
 * timeout, a transient refusal) is {@link StoreUnavailable}; a refusal of a command itself (a
 * script's error: a bug of ours) is an opaque failure, 500.
 */
export function storeFailure(err: unknown): StoreError {
  if (err instanceof StoreError) return err
  const e = err as { name?: string; message?: string }
  if (e.name === 'ReplyError' && !TRANSIENT.test(String(e.message))) {
    const failed = new StoreError('ERR_STORE_FAILED', 'The store refused a command')
    failed.cause = err
    return failed
  }
  return new StoreUnavailable(err)
}
