import { LocalSignals } from './memory-answers.js'
import { MemoryConnections } from './memory-connections.js'
import { MemoryIdempotency } from './memory-idempotency.js'
import { MemoryOnce } from './memory-once.js'
import { MemoryTasks } from './memory-tasks.js'
import { DEFAULT_LIMITS, type Store, type StoreCompanions, type StoreLimits } from './types.js'

/**
 * The embedded default {@link Store}: one process, bounded, lost on restart. Its role objects each
 * keep their own state (the connections' LRU table is both `connections` and `mailbox`, see
 * memory-connections.ts); its companions are in memory too, which is right only here: a store
 * shared between processes must bring its own (see {@link StoreCompanions}).
 * @example
 * const store = new MemoryStore({ maxConnections: 1000 })
 * await store.tasks.createTask(owner, task)
 */
export class MemoryStore implements Store {
  readonly limits: StoreLimits
  readonly connections: MemoryConnections
  readonly mailbox: MemoryConnections
  readonly signals = new LocalSignals()
  readonly tasks: MemoryTasks
  readonly idempotency: MemoryIdempotency
  // Loaded when a feature asks: a server without webhooks or a gateway never loads their code.
  readonly companions: StoreCompanions = {
    rateLimit: async () => ({}),
    // One table for the store, however many plugins ask: a proof seen by one is seen by all.
    onceKeys: async () => (this.#once ??= new MemoryOnce(this.limits.maxOnceKeys)),
    webhooks: async () => new (await import('../webhooks/memory.js')).MemoryWebhookStore(),
    roundRelay: async () => new (await import('../gateway/relay.js')).MemoryRelay()
  }

  #once: MemoryOnce | undefined

  constructor(limits: Partial<StoreLimits> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...limits }
    this.connections = this.mailbox = new MemoryConnections(this.limits)
    this.tasks = new MemoryTasks(this.limits)
    this.idempotency = new MemoryIdempotency(this.limits)
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.connections.clear()
    this.idempotency.clear()
    this.tasks.clear()
    this.#once?.clear()
  }
}
