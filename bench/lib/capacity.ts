import { Redis } from 'ioredis'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import type { Store } from '../../src/store/types.js'
import { benchNotification } from '../catalogue.js'
import { startRedis } from './procs.js'

/** Redis memory per unit of state, measured; and what the round numbers of a deployment cost. */
export interface Capacity {
  redis: string
  /**
   * Bytes per item: the sum of MEMORY USAGE of the keys it made (registry indexes included), and
   * Redis' used_memory growth over the same items; and the in-memory store's heap growth for them.
   */
  items: { what: string; count: number; memoryUsage: number; usedMemory: number; memoryStore: number }[]
  /** Projections from the larger of the two figures. */
  projections: { what: string; bytes: number }[]
}

/**
 * Fill a fresh redis-server through {@link RedisStore} with `count` of each kind of state, as
 * requests would, and divide: per idle logical connection (one that set its log level: its hash
 * and its place in the registry of connections), per queued notification (the bench's log
 * message, about 120 bytes of JSON), per task (completed, with a small result, and its place in
 * the task index) and per replay record (an idempotent tool call's stored answer, and its place in
 * the index). MEMORY USAGE counts each key with its overhead (SAMPLES 0: every element);
 * used_memory growth also counts the keyspace's dictionaries and expiry entries.
 */
export async function capacity(count = 10_000): Promise<Capacity> {
  const server = await startRedis()
  const raw = new Redis(server.url)
  try {
    const version = /redis_version:(\S+)/.exec(await raw.info('server'))?.[1] ?? 'unknown'
    const items: Capacity['items'] = []
    // Room for every item (counts, and bytes at 4 KiB each), so that no limit drops or refuses one.
    const bytes = count * 4096
    const limits = {
      maxConnections: count * 2,
      maxNotifications: count * 2,
      maxNotificationBytes: bytes,
      maxNotificationBytesTotal: bytes,
      maxTasks: count * 2,
      maxTasksPerPrincipal: count * 2,
      maxTaskBytes: bytes,
      maxTaskBytesPerPrincipal: bytes,
      maxIdempotencyRecords: count * 2,
      maxIdempotencyRecordsPerPrincipal: count * 2,
      maxIdempotencyBytes: bytes,
      maxIdempotencyBytesPerPrincipal: bytes
    }
    const measure = async (what: string, prefix: string, fill: (store: Store) => Promise<void>) => {
      const store = new RedisStore({ url: server.url, prefix, limits })
      let memoryUsed: number
      let usedMemoryGrowth: number
      try {
        await store.ping()
        const before = await usedMemory(raw)
        await fill(store)
        const after = await usedMemory(raw)
        memoryUsed = await memoryUsage(raw, `${prefix}*`)
        usedMemoryGrowth = after - before
      } finally {
        await store.close()
      }
      // The same items in this process's heap, through the in-memory store (collected before and after).
      const gc = collector()
      let memory: MemoryStore | undefined = new MemoryStore(limits)
      gc()
      const heapBefore = process.memoryUsage().heapUsed
      await fill(memory)
      gc()
      const heapGrowth = process.memoryUsage().heapUsed - heapBefore
      await memory.close()
      memory = undefined
      items.push({ what, count, memoryUsage: memoryUsed / count, usedMemory: usedMemoryGrowth / count, memoryStore: heapGrowth / count })
    }
    await measure('idle logical connection', 'cap-conn:', async (store) => {
      for (let i = 0; i < count; i += 500) await Promise.all(range(i, 500).map((c) => store.connections.setLogLevel(`user-${c}`, 'info')))
    })
    await measure('queued notification', 'cap-note:', async (store) => {
      for (let i = 0; i < count; i += 500) await Promise.all(range(i, 500).map((n) => store.mailbox.pushNotification('user-1', benchNotification(n))))
    })
    await measure('task (completed, small result)', 'cap-task:', async (store) => {
      for (let i = 0; i < count; i += 500) {
        await Promise.all(
          range(i, 500).map(async (n) => {
            const now = new Date().toISOString()
            const taskId = `task-${String(n).padStart(22, '0')}`
            await store.tasks.createTask('user-1', { taskId, status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: 3_600_000, pollIntervalMs: 1000 })
            await store.tasks.updateTask('user-1', taskId, { status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } })
          })
        )
      }
    })
    await measure('replay record (idempotent call, small answer)', 'cap-idem:', async (store) => {
      const answer = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'hello world' }], resultType: 'complete' } })
      for (let i = 0; i < count; i += 500) {
        await Promise.all(
          range(i, 500).map(async (n) => {
            const id = `req-${String(n).padStart(22, '0')}`
            await store.idempotency.beginIdempotent('user-1', id, 'a'.repeat(43), 30_000)
            await store.idempotency.finishIdempotent('user-1', id, answer, 600_000)
          })
        )
      }
    })
    const per = (what: string) => {
      const item = items.find((i) => i.what.startsWith(what))!
      return Math.max(item.memoryUsage, item.usedMemory)
    }
    return {
      redis: version,
      items,
      projections: [
        { what: '1 million idle logical connections', bytes: per('idle') * 1e6 },
        { what: '10 million queued notifications', bytes: per('queued') * 1e7 },
        { what: '1 million tasks', bytes: per('task') * 1e6 },
        { what: '1 million replay records', bytes: per('replay') * 1e6 }
      ]
    }
  } finally {
    raw.disconnect()
    await server.stop()
  }
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i)

/** A full collection, whether or not node runs with --expose-gc. */
function collector(): () => void {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  return () => {
    gc()
    gc()
  }
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1])
}

/** The sum of MEMORY USAGE (every element sampled) of the keys matching `pattern`. */
async function memoryUsage(redis: Redis, pattern: string): Promise<number> {
  let total = 0
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    const sizes = await Promise.all(keys.map((k) => redis.memory('USAGE', k, 'SAMPLES', 0) as Promise<number | null>))
    total += sizes.reduce<number>((a, b) => a + (b ?? 0), 0)
  } while (cursor !== '0')
  return total
}

/** The table for bench/README.md. */
export function capacityTable(c: Capacity): string {
  const mb = (b: number) => (b >= 1e9 ? `${(b / 1e9).toFixed(2)} GB` : `${(b / 1e6).toFixed(0)} MB`)
  return [
    `Redis ${c.redis}, ${c.items[0]?.count ?? 0} of each:`,
    '',
    '| state | Redis: bytes each (MEMORY USAGE) | Redis: bytes each (used_memory growth) | in-memory store: bytes each (heap growth) |',
    '| --- | ---: | ---: | ---: |',
    ...c.items.map((i) => `| ${i.what} | ${i.memoryUsage.toFixed(0)} | ${i.usedMemory.toFixed(0)} | ${i.memoryStore.toFixed(0)} |`),
    '',
    '| projection (the larger figure) | Redis memory |',
    '| --- | ---: |',
    ...c.projections.map((p) => `| ${p.what} | ${mb(p.bytes)} |`)
  ].join('\n')
}
