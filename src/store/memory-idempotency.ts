import type { IdempotencyStore, IdempotentStart, StoreLimits } from './types.js'

/** The idempotency records of a {@link MemoryStore}: claims (leased) and outcomes (kept `ttlMs`). */
export class MemoryIdempotency implements IdempotencyStore {
  readonly #idempotent = new Map<string, { digest: string; response?: string; expiresAt: number }>()

  constructor(readonly limits: Pick<StoreLimits, 'maxIdempotencyRecords'>) {}

  async beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    const key = `${owner}\0${requestId}`
    const now = Date.now()
    const r = this.#idempotent.get(key)
    if (r !== undefined && r.expiresAt > now) {
      if (r.digest !== digest) return { state: 'conflict' }
      return r.response === undefined ? { state: 'in_progress' } : { state: 'done', response: r.response }
    }
    this.#idempotent.delete(key)
    if (this.#idempotent.size >= this.limits.maxIdempotencyRecords) {
      for (const [k, v] of this.#idempotent) if (v.expiresAt <= now) this.#idempotent.delete(k)
      let first: [string, { expiresAt: number }] | undefined
      for (const e of this.#idempotent) if (first === undefined || e[1].expiresAt < first[1].expiresAt) first = e
      if (first !== undefined && this.#idempotent.size >= this.limits.maxIdempotencyRecords) this.#idempotent.delete(first[0])
    }
    this.#idempotent.set(key, { digest, expiresAt: now + leaseMs })
    return { state: 'new' }
  }

  async renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    const r = this.#idempotent.get(`${owner}\0${requestId}`)
    if (r === undefined || r.response !== undefined || r.expiresAt <= Date.now()) return false
    r.expiresAt = Date.now() + leaseMs
    return true
  }

  async finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    const r = this.#idempotent.get(`${owner}\0${requestId}`)
    if (r === undefined || r.expiresAt <= Date.now()) return
    r.response = response
    r.expiresAt = Date.now() + ttlMs
  }

  async abandonIdempotent(owner: string, requestId: string): Promise<void> {
    this.#idempotent.delete(`${owner}\0${requestId}`)
  }

  clear(): void {
    this.#idempotent.clear()
  }
}
