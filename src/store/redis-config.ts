import { readFileSync } from 'node:fs'
import type { RedisStoreOptions } from './redis-connect.js'

/** The `MCP_REDIS_*` environment settings (see docs/redis.md). */
export interface RedisConfig {
  /** One Redis server: `redis://` or `rediss://` (TLS), with its password in the URL. */
  MCP_REDIS_URL?: string | undefined
  /** Redis Cluster: comma-separated `host:port` seeds. */
  MCP_REDIS_CLUSTER_NODES?: string | undefined
  /** Sentinel: comma-separated `host:port` of the Sentinels, and the monitored primary's name. */
  MCP_REDIS_SENTINELS?: string | undefined
  MCP_REDIS_SENTINEL_MASTER?: string | undefined
  MCP_REDIS_SENTINEL_PASSWORD?: string | undefined
  /** ACL user and password of the data nodes (cluster and Sentinel forms). */
  MCP_REDIS_USERNAME?: string | undefined
  MCP_REDIS_PASSWORD?: string | undefined
  /** `true`: TLS to the data nodes and Sentinels (cluster and Sentinel forms; a URL says `rediss://`). */
  MCP_REDIS_TLS?: 'true' | 'false' | undefined
  /** A PEM file of the CAs to trust for TLS (any form). */
  MCP_REDIS_TLS_CA_FILE?: string | undefined
  /** Prefix of every Redis key and channel (default `mcp:`). */
  MCP_REDIS_PREFIX?: string | undefined
  /** Replicas that must have a write before the client hears of it (WAIT); 0: none. */
  MCP_REDIS_WAIT_REPLICAS?: number | undefined
  MCP_REDIS_WAIT_TIMEOUT_MS?: number | undefined
  /** How long a Redis command may take before the request fails with 503 (default 2000 ms). */
  MCP_REDIS_COMMAND_TIMEOUT_MS?: number | undefined
  /** `off`: the store's Lua runs as scripts even where Redis Functions are there (default `auto`). */
  MCP_REDIS_FUNCTIONS?: 'auto' | 'off' | undefined
}

const list = (v: string) => v.split(/[\s,]+/).filter((s) => s !== '')

/** What is wrong with the `MCP_REDIS_*` settings together (each alone is checked by the schema). */
export function redisProblems(c: RedisConfig): string[] {
  const forms = (['MCP_REDIS_URL', 'MCP_REDIS_CLUSTER_NODES', 'MCP_REDIS_SENTINELS'] as const).filter((k) => c[k] !== undefined)
  const problems: string[] = []
  if (forms.length > 1) problems.push(`Set only one of ${forms.join(', ')}`)
  if ((c.MCP_REDIS_SENTINELS === undefined) !== (c.MCP_REDIS_SENTINEL_MASTER === undefined)) {
    problems.push('MCP_REDIS_SENTINELS and MCP_REDIS_SENTINEL_MASTER go together')
  }
  if (forms.length === 0) {
    const stray = (Object.keys(c) as (keyof RedisConfig)[]).filter(
      (k) => k.startsWith('MCP_REDIS_') && !k.startsWith('MCP_REDIS_WAIT_') && k !== 'MCP_REDIS_COMMAND_TIMEOUT_MS' && c[k] !== undefined && k !== 'MCP_REDIS_SENTINEL_MASTER'
    )
    if (stray.length > 0) problems.push(`${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} set without MCP_REDIS_URL, MCP_REDIS_CLUSTER_NODES or MCP_REDIS_SENTINELS`)
  }
  if (c.MCP_REDIS_TLS_CA_FILE !== undefined) {
    try {
      readFileSync(c.MCP_REDIS_TLS_CA_FILE)
    } catch (err) {
      problems.push(`MCP_REDIS_TLS_CA_FILE cannot be read: ${(err as Error).message}`)
    }
  }
  return problems
}

/** The {@link RedisStore} options the settings name, or undefined when they name no Redis. */
export function redisFromConfig(c: RedisConfig): RedisStoreOptions | undefined {
  const target: RedisStoreOptions = {}
  if (c.MCP_REDIS_URL !== undefined) target.url = c.MCP_REDIS_URL
  else if (c.MCP_REDIS_CLUSTER_NODES !== undefined) target.clusterNodes = list(c.MCP_REDIS_CLUSTER_NODES)
  else if (c.MCP_REDIS_SENTINELS !== undefined) {
    target.sentinels = list(c.MCP_REDIS_SENTINELS)
    target.sentinelMaster = c.MCP_REDIS_SENTINEL_MASTER!
  } else return undefined
  if (c.MCP_REDIS_SENTINEL_PASSWORD !== undefined) target.sentinelPassword = c.MCP_REDIS_SENTINEL_PASSWORD
  if (c.MCP_REDIS_USERNAME !== undefined) target.username = c.MCP_REDIS_USERNAME
  if (c.MCP_REDIS_PASSWORD !== undefined) target.password = c.MCP_REDIS_PASSWORD
  const ca = c.MCP_REDIS_TLS_CA_FILE === undefined ? undefined : readFileSync(c.MCP_REDIS_TLS_CA_FILE)
  if (ca !== undefined) target.tls = { ca }
  else if (c.MCP_REDIS_TLS === 'true') target.tls = true
  target.prefix = c.MCP_REDIS_PREFIX ?? 'mcp:'
  if (c.MCP_REDIS_COMMAND_TIMEOUT_MS !== undefined) target.commandTimeoutMs = c.MCP_REDIS_COMMAND_TIMEOUT_MS
  if (c.MCP_REDIS_FUNCTIONS !== undefined) target.functions = c.MCP_REDIS_FUNCTIONS
  if (c.MCP_REDIS_WAIT_REPLICAS) {
    target.waitReplicas = c.MCP_REDIS_WAIT_REPLICAS
    target.waitTimeoutMs = c.MCP_REDIS_WAIT_TIMEOUT_MS ?? 1000
  }
  return target
}
