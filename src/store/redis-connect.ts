import { createRequire } from 'node:module'
import type { ConnectionOptions } from 'node:tls'
import type * as IORedis from 'ioredis'
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis'
import type { StoreLimits } from './types.js'

/**
 * Where the Redis of a {@link RedisStore} is: exactly one of `url` (one server), `clusterNodes`
 * (Redis Cluster) or `sentinels` with `sentinelMaster` (a primary and replicas under Sentinel).
 */
export interface RedisTarget {
  /** `redis://[[user]:password@]host:port[/db]`, or `rediss://` for TLS. */
  url?: string
  /** Redis Cluster seed nodes, `host:port` each (any few nodes: the rest are discovered). */
  clusterNodes?: string[]
  /** Sentinels, `host:port` each. */
  sentinels?: string[]
  /** The name of the primary the Sentinels monitor. */
  sentinelMaster?: string
  /** ACL user and password of the data nodes (cluster and Sentinel forms; the URL carries its own). */
  username?: string
  password?: string
  /** The Sentinels' own password, when they require one. */
  sentinelPassword?: string
  /** TLS to the data nodes (and to the Sentinels): `true`, or Node's TLS options (CA, client certificate). */
  tls?: boolean | ConnectionOptions
  /**
   * How long a command may take before it fails (default 2000 ms; longer when waiting for replicas):
   * a Redis that hangs is then a fast 503, not a request held for long.
   */
  commandTimeoutMs?: number
  /** Extra ioredis options of every connection (timeouts, ...). */
  redis?: RedisOptions
  /** Extra ioredis Cluster options (cluster form only). */
  cluster?: ClusterOptions
}

export interface RedisStoreOptions extends RedisTarget {
  /** Prefix of every key and channel, so that several servers can share one Redis (default `mcp:`; no braces). */
  prefix?: string
  limits?: Partial<StoreLimits>
  /** A logical connection unused this long is forgotten (default 24 hours). */
  connectionTtlMs?: number
  /** How long a client's answer waits for the handler that asked (default 10 minutes). */
  answerTtlMs?: number
  /**
   * Waiting handlers also look for their answers this often, in case a wake-up was lost while the
   * subscriber connection was down (default 5 s).
   */
  sweepMs?: number
  /**
   * Durability: a write that the client is told about (a queued request or notification, an answer,
   * a task, a replay record, a session) is answered only once this many replicas have it (Redis
   * WAIT); default 0, Redis' asynchronous replication. See docs/redis.md for what each survives.
   */
  waitReplicas?: number
  /** How long WAIT waits for them (default 1000 ms); beyond, the request fails with 503. */
  waitTimeoutMs?: number
  /**
   * The most shards of the ledgers that bound tasks and replay records over all owners (1 to 256;
   * default 16 on a Redis Cluster, else 1). Each shard holds a share of the store-wide bounds: see
   * docs/deployment.md on the capacity and the error this trades for it.
   */
  ledgerShards?: number
  /**
   * `auto` (default): the steps run as Redis Functions, one library loaded on each master, where
   * Redis has them (7.0) and allows them; else, and with `off`, as scripts (EVALSHA). See docs/redis.md.
   */
  functions?: 'auto' | 'off'
}

/** A command client and a subscriber over the same target. */
export interface RedisConnections {
  client: Redis | Cluster
  sub: Redis | Cluster
  /** Redis Cluster: sharded pub/sub (SPUBLISH/SSUBSCRIBE); otherwise classic PUBLISH/SUBSCRIBE. */
  sharded: boolean
}

/**
 * How every command of a store is sent: failing after 2 retries and the command timeout (a Redis
 * that hangs is a fast 503), each turn's commands in one write ({@link batchTurns}; a Cluster's
 * by ioredis' auto-pipelining). The bench's ceiling sends its commands so too.
 */
export const COMMAND_OPTIONS = { maxRetriesPerRequest: 2, commandTimeout: 2000 } as const satisfies RedisOptions

/**
 * Every command sent on `client` (the store's steps, the rate limiter's, the webhook store's, the
 * relay's: all go through `sendCommand`): the commands of one turn of the event loop leave in one
 * write. The first corks the connection, and it is uncorked once the turn's I/O callbacks have
 * run (`setImmediate`), so the commands of requests that arrived together, each in a callback of its
 * own, reach Redis in one write and are read there in one read. ioredis' auto-pipelining batches
 * them so too, but makes a pipeline for each batch and holds a batch's commands until the one before
 * it is answered: under 32 clients it had V8 promote ~5 KB a Redis task creation, and without it
 * this server's CPU a task creation and a task poll fell by about a fifth (medians of 3 launches,
 * unpaired: bench/README.md, "What the garbage collector showed"). Before the first connection
 * there is no socket yet: ioredis queues the commands.
 */
export function batchTurns(client: Redis): Redis {
  let corked = false
  const uncork = (stream: Redis['stream']) => {
    corked = false
    stream.uncork()
  }
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command, stream) => {
    const socket = client.stream as Redis['stream'] | undefined
    if (!corked && socket !== undefined) {
      corked = true
      socket.cork()
      setImmediate(uncork, socket)
    }
    return send(command, stream)
  }
  return client
}

function withoutTimeout({ commandTimeout: _commandTimeout, ...rest }: RedisOptions): RedisOptions {
  return rest
}

/** `host:port` to ioredis' `{ host, port }`. */
export function hostPort(s: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(s.trim())
  if (m === null || Number(m[2]) > 65535) throw new Error(`Not a host:port: ${JSON.stringify(s)}`)
  return { host: m[1]!, port: Number(m[2]) }
}

/**
 * Open the connections of a store. Commands fail after 2 retries and `commandTimeoutMs` (a request
 * then answers 503 rather than hanging); the subscriber retries forever. Both reconnect by themselves, on a
 * cluster to the replica promoted after a failover (ioredis follows MOVED and refreshes the slots),
 * under Sentinel to the new primary (asked from the Sentinels, which also announce a switch).
 */
export function connect(target: RedisTarget): RedisConnections {
  // ioredis is loaded by the first store that connects, not with the library: it costs ~150 ms of
  // CPU at start, which a server on the memory store does not need to pay.
  const { Cluster, Redis } = createRequire(import.meta.url)('ioredis') as typeof IORedis
  const forms = [target.url !== undefined, target.clusterNodes !== undefined, target.sentinels !== undefined].filter(Boolean).length
  if (forms !== 1) throw new Error('RedisStore: give exactly one of url, clusterNodes or sentinels')
  const tls = target.tls === true ? {} : target.tls === false ? undefined : target.tls
  const auth: RedisOptions = {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(tls === undefined ? {} : { tls })
  }
  const base: RedisOptions = {
    ...COMMAND_OPTIONS,
    commandTimeout: target.commandTimeoutMs ?? COMMAND_OPTIONS.commandTimeout,
    // A primary demoted to replica answers writes with READONLY: reconnect (to the new primary) and retry.
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
    ...auth,
    ...target.redis
  }
  // The subscriber waits for its connection however long it takes: a SUBSCRIBE that timed out would
  // leave the bus (and readiness) without its channels for good. It is re-subscribed by the bus on
  // each 'ready' (RedisBus), not by ioredis, which leaves that promise unhandled: a connection lost
  // again before the answer, then a close, made an unhandled rejection (fatal by default in Node).
  const subOptions = { ...withoutTimeout(base), maxRetriesPerRequest: null, autoResubscribe: false }
  if (target.clusterNodes !== undefined) {
    const nodes = target.clusterNodes.map(hostPort)
    // A Cluster's commands go to a connection a master: ioredis' auto-pipelining batches them by node.
    const { enableAutoPipelining = true, ...redisOptions } = base
    const options: ClusterOptions = { enableAutoPipelining, retryDelayOnFailover: 200, retryDelayOnClusterDown: 200, ...target.cluster }
    return {
      client: new Cluster(nodes, { ...options, redisOptions }),
      // The subscriber sends no command that a MOVED could correct: it polls the slots instead, and
      // re-subscribes a shard's channels on the replica that took over.
      sub: new Cluster(nodes, {
        ...options,
        redisOptions: { ...withoutTimeout(redisOptions), maxRetriesPerRequest: null },
        shardedSubscribers: true,
        slotsRefreshInterval: 2000,
        ...target.cluster
      }),
      sharded: true
    }
  }
  if (target.sentinels !== undefined) {
    if (target.sentinelMaster === undefined) throw new Error('RedisStore: sentinels need sentinelMaster, the name of the primary')
    const sentinel: RedisOptions = {
      sentinels: target.sentinels.map(hostPort),
      name: target.sentinelMaster,
      // Hear +switch-master from the Sentinels rather than wait for the old primary's socket to fail.
      failoverDetector: true,
      ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
      ...(tls === undefined ? {} : { enableTLSForSentinelMode: true, sentinelTLS: tls })
    }
    return { client: batchTurns(sentinelSafe(new Redis({ ...base, ...sentinel }))), sub: sentinelSafe(new Redis({ ...subOptions, ...sentinel })), sharded: false }
  }
  return { client: batchTurns(new Redis(target.url!, base)), sub: new Redis(target.url!, subOptions), sharded: false }
}

/** What {@link sentinelSafe} reads of ioredis (6.0) internals the types keep private. */
interface SentinelInternals {
  manuallyClosing: boolean
  connector: {
    connect(emitter: unknown): Promise<unknown>
    initFailoverDetector(): Promise<void>
  }
}

/**
 * Two mends of ioredis (6.0) under Sentinel, both around its failover detector (which subscribes
 * to the Sentinels' `+switch-master` and, on hearing it, stops the connection so that it is made
 * again to the new primary):
 *
 * - The detector of a connection that broke (the primary died) stays subscribed while the client
 *   reconnects. When it hears the switch during a reconnection attempt (asking the Sentinels for the
 *   primary), it stops that attempt, and ioredis takes the stopped attempt for a closed client: it
 *   fails every queued command and ends the client for good (`Connection is closed.` ever after;
 *   a store that answers 503 until the process restarts). Here an attempt stopped that way, on a
 *   client nobody is closing, starts over: it asks the Sentinels again, who now name the new primary.
 * - A detector starts on the `connect` of each new socket to the primary, and `disconnect()` stops
 *   the one it has. A client closed while that socket was still connecting still sees `connect`
 *   (a connecting socket ends only once connected), so a detector would start after the close:
 *   Sentinel connections nobody closes, which keep the process alive and reconnect every minute.
 *   Here a detector never starts for a client being closed, and its failure is nobody's unhandled
 *   rejection (ioredis does not catch it).
 */
function sentinelSafe(client: Redis): Redis {
  const internals = client as unknown as SentinelInternals
  const { connector } = internals
  const closing = () => internals.manuallyClosing || client.status === 'end'
  const connect = connector.connect.bind(connector)
  // Both sides of each closing() below race a close() with a Sentinel connection: no test can
  // order them steadily.
  /* c8 ignore start */
  const again = (emitter: unknown): Promise<unknown> =>
    connect(emitter).catch((err: unknown) => {
      if (closing() || (err as Error).message !== 'Connection is closed.') throw err
      return again(emitter)
    })
  connector.connect = again
  const start = connector.initFailoverDetector.bind(connector)
  connector.initFailoverDetector = () => (closing() ? Promise.resolve() : start().catch(() => undefined))
  /* c8 ignore stop */
  return client
}
