import { ExpiryHeap } from './expiry-heap.js'
import { msUntil } from './limits.js'
import { StoreFull } from './store-errors.js'
import type { OnceKeys } from './types.js'

interface Claim {
  readonly key: string
  readonly expiresAt: number
}

/**
 * {@link OnceKeys} of one process: a map of claims and the heap of their expiries, so that expired
 * claims go in O(log n) each as new ones come. Bounded by `max`: when full, a new key is refused
 * with {@link StoreFull} until the first claim expires, since forgetting one early would let its
 * proof be replayed.
 */
export class MemoryOnce implements OnceKeys {
  readonly #claims = new Map<string, number>()
  readonly #heap = new ExpiryHeap<Claim>((c) => this.#claims.get(c.key) !== c.expiresAt)

  constructor(
    readonly max: number,
    readonly now: () => number = Date.now
  ) {}

  async once(key: string, ttlMs: number): Promise<boolean> {
    const now = this.now()
    for (let c = this.#heap.takeExpired(now); c !== undefined; c = this.#heap.takeExpired(now)) this.#claims.delete(c.key)
    if (this.#claims.has(key)) return false
    if (this.#claims.size >= this.max) throw new StoreFull('single-use keys', this.max, msUntil(this.#heap.first()!.expiresAt, now))
    const expiresAt = now + Math.max(1, ttlMs)
    this.#claims.set(key, expiresAt)
    this.#heap.push({ key, expiresAt })
    return true
  }

  clear(): void {
    this.#claims.clear()
    this.#heap.clear()
  }
}
