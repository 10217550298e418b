import { randomUUID } from 'node:crypto'
import type { RedisStore, RedisStoreOptions } from '../../src/store/redis.js'
import type { StoreFactory } from './store-contract.js'

/**
 * The contract suite's factory for a RedisStore of any form (one Redis, Cluster, Sentinel): each
 * store its own prefix, as several servers sharing one Redis would have, and a peer on the same
 * prefix.
 */
export function redisStoreFactory(open: (options: Partial<RedisStoreOptions>) => RedisStore): StoreFactory {
  const prefixes = new WeakMap<RedisStore, string>()
  return {
    create: async (limits) => {
      const prefix = `t${randomUUID().slice(0, 8)}:`
      const store = open({ prefix, ...(limits === undefined ? {} : { limits }) })
      prefixes.set(store, prefix)
      return store
    },
    peer: async (store) => {
      const s = store as RedisStore
      const peer = open({ prefix: prefixes.get(s)!, limits: s.limits })
      prefixes.set(peer, prefixes.get(s)!)
      // Ready means subscribed too: a peer that is not yet listening misses a cancel.
      await peer.ping()
      return peer
    }
  }
}
