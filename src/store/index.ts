import type { Static, Type } from '@sinclair/typebox'
import { limitsFromConfig, type StoreLimitsConfig } from './limits.js'
import { MemoryStore } from './memory.js'
import { redisFromConfig, type RedisConfig } from './redis-config.js'
import { RedisStore } from './redis.js'
import type { Store, StoreLimits } from './types.js'

/** Where shared state lives: a Redis (one server, a cluster, or under Sentinel), or none for this process' memory. */
export type StoreConfig = RedisConfig & Partial<Static<ReturnType<typeof Type.Object<typeof StoreLimitsConfig>>>>

/**
 * The store the configuration names: {@link RedisStore} when a Redis is configured (several
 * instances share it), else a {@link MemoryStore} (one process).
 * @example
 * const store = createStore(loadConfig())
 */
export function createStore(config: StoreConfig, options: Partial<StoreLimits> = {}): Store {
  const redis = redisFromConfig(config)
  const limits = { ...limitsFromConfig(config), ...options }
  return redis === undefined ? new MemoryStore(limits) : new RedisStore({ ...redis, limits })
}

export { MemoryStore, RedisStore }
export type { Store, StoreLimits }
