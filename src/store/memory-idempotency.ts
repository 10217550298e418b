import { QuotaExceeded, StoreFull } from './store-errors.js'
import { RECORD_OVERHEAD, msUntil } from './limits.js'
import type { IdempotencyStore, IdempotentStart, StoreLimits } from './types.js'

type Limits = Pick<StoreLimits, 'maxIdempotencyRecords' | 'maxIdempotencyBytes' | 'maxIdempotencyRecordsPerPrincipal' | 'maxIdempotencyBytesPerPrincipal'>

interface Entry {
  owner: string
  digest: string
  response?: string
  expiresAt: number
  bytes: number
}

/** What one owner, or everyone, holds. */
interface Usage {
  count: number
  bytes: number
}

/**
 * The idempotency records of a {@link MemoryStore}: claims (leased) and outcomes (kept `ttlMs`),
 * bounded by count and bytes, in all and per owner. Nothing is ever evicted to make room (a running
 * claim pushed out let its retry run the tool twice): a new claim that does not fit is refused.
 */
export class MemoryIdempotency implements IdempotencyStore {
  readonly #records = new Map<string, Entry>()
  readonly #usage = new Map<string, Usage>()
  readonly #total: Usage = { count: 0, bytes: 0 }

  constructor(readonly limits: Limits) {}

  async beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    const key = `${owner}\0${requestId}`
    const now = Date.now()
    const r = this.#records.get(key)
    if (r !== undefined && r.expiresAt > now) {
      if (r.digest !== digest) return { state: 'conflict' }
      return r.response === undefined ? { state: 'in_progress' } : { state: 'done', response: r.response }
    }
    if (r !== undefined) this.#drop(key, r)
    const bytes = RECORD_OVERHEAD + requestId.length + digest.length
    const refusal = this.#refusal(owner, 1, bytes, now)
    if (refusal !== undefined) throw refusal
    this.#put(key, { owner, digest, expiresAt: now + leaseMs, bytes })
    return { state: 'new' }
  }

  async renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    const r = this.#records.get(`${owner}\0${requestId}`)
    if (r === undefined || r.response !== undefined || r.expiresAt <= Date.now()) return false
    r.expiresAt = Date.now() + leaseMs
    return true
  }

  /** An outcome that does not fit (the owner's share or the store's bytes) is not kept: a retry runs again. */
  async finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    const key = `${owner}\0${requestId}`
    const r = this.#records.get(key)
    const now = Date.now()
    if (r === undefined || r.expiresAt <= now) return
    const bytes = RECORD_OVERHEAD + requestId.length + r.digest.length + response.length
    this.#drop(key, r)
    if (this.#refusal(owner, 1, bytes, now) !== undefined) return
    this.#put(key, { ...r, response, expiresAt: now + ttlMs, bytes })
  }

  async abandonIdempotent(owner: string, requestId: string): Promise<void> {
    const key = `${owner}\0${requestId}`
    const r = this.#records.get(key)
    if (r !== undefined) this.#drop(key, r)
  }

  clear(): void {
    this.#records.clear()
    this.#usage.clear()
    this.#total.count = this.#total.bytes = 0
  }

  /** Why `count` more records of `bytes` do not fit, with when space frees; undefined when they do. */
  #refusal(owner: string, count: number, bytes: number, now: number): QuotaExceeded | StoreFull | undefined {
    const L = this.limits
    const mine = () => this.#use(owner)
    const all = () => this.#total
    const overMine = () => mine().count + count > L.maxIdempotencyRecordsPerPrincipal || mine().bytes + bytes > L.maxIdempotencyBytesPerPrincipal
    const overAll = () => all().count + count > L.maxIdempotencyRecords || all().bytes + bytes > L.maxIdempotencyBytes
    if (!overMine() && !overAll()) return undefined
    // Only when a bound is reached: a walk over every record, dropping the expired ones.
    for (const [k, v] of this.#records) if (v.expiresAt <= now) this.#drop(k, v)
    if (overMine()) {
      const byCount = mine().count + count > L.maxIdempotencyRecordsPerPrincipal
      return new QuotaExceeded('replayable tool calls', byCount ? L.maxIdempotencyRecordsPerPrincipal : L.maxIdempotencyBytesPerPrincipal, this.#frees(owner, now))
    }
    if (overAll()) {
      const byCount = all().count + count > L.maxIdempotencyRecords
      return new StoreFull('replayable tool calls', byCount ? L.maxIdempotencyRecords : L.maxIdempotencyBytes, this.#frees(undefined, now))
    }
    return undefined
  }

  /** When the first record (of `owner`, or of anyone) expires: the earliest that space is certain to free. */
  #frees(owner: string | undefined, now: number): number {
    let first = Number.POSITIVE_INFINITY
    for (const v of this.#records.values()) if ((owner === undefined || v.owner === owner) && v.expiresAt < first) first = v.expiresAt
    return msUntil(first === Number.POSITIVE_INFINITY ? now + 1000 : first, now)
  }

  #use(owner: string): Usage {
    let u = this.#usage.get(owner)
    if (u === undefined) this.#usage.set(owner, (u = { count: 0, bytes: 0 }))
    return u
  }

  #put(key: string, e: Entry): void {
    this.#records.set(key, e)
    for (const u of [this.#use(e.owner), this.#total]) {
      u.count++
      u.bytes += e.bytes
    }
  }

  #drop(key: string, e: Entry): void {
    this.#records.delete(key)
    for (const u of [this.#use(e.owner), this.#total]) {
      u.count--
      u.bytes -= e.bytes
    }
    if (this.#usage.get(e.owner)!.count === 0) this.#usage.delete(e.owner)
  }
}
