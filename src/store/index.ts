import { MemoryStore } from './memory.js'
import { RedisStore } from './redis.js'
import type { Store, StoreLimits } from './types.js'

export interface StoreConfig {
  /** Where shared state lives: a Redis URL, or none for this process' memory. */
  MCP_REDIS_URL?: string | undefined
  /** Prefix of every Redis key and channel (default `mcp:`). */
  MCP_REDIS_PREFIX?: string | undefined
}

/**
 * The store the configuration names: {@link RedisStore} when `MCP_REDIS_URL` is set (several
 * instances share it), else a {@link MemoryStore} (one process).
 * @example
 * const store = createStore(loadConfig())
 */
export function createStore(config: StoreConfig, limits: Partial<StoreLimits> = {}): Store {
  if (config.MCP_REDIS_URL === undefined) return new MemoryStore(limits)
  return new RedisStore({ url: config.MCP_REDIS_URL, prefix: config.MCP_REDIS_PREFIX ?? 'mcp:', limits })
}

export { MemoryStore, RedisStore }
export type { Store, StoreLimits }
