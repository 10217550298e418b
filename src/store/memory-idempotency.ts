import { QuotaExceeded, StoreFull } from './store-errors.js'
import { RECORD_OVERHEAD, msUntil } from './limits.js'
import type { IdempotencyStore, IdempotentStart, StoreLimits } from './types.js'
import { ExpiryHeap } from './expiry-heap.js'
import { copyOf } from '../core/results.js'

type Limits = Pick<StoreLimits, 'maxIdempotencyRecords' | 'maxIdempotencyBytes' | 'maxIdempotencyRecordsPerPrincipal' | 'maxIdempotencyBytesPerPrincipal'>

interface Entry {
  owner: string
  digest: string
  response?: string
  expiresAt: number
  bytes: number
}

/** A record's expiry when it was set (a renewal sets another: this one goes stale). */
interface Expiry {
  readonly key: string
  readonly entry: Entry
  readonly expiresAt: number
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
 * Records are also kept by expiry, in all and per owner ({@link ExpiryHeap}), so that dropping the
 * expired ones and a refusal's Retry-After cost O(log n), not a walk over every record.
 */
export class MemoryIdempotency implements IdempotencyStore {
  readonly #records = new Map<string, Entry>()
  readonly #usage = new Map<string, Usage>()
  readonly #total: Usage = { count: 0, bytes: 0 }
  readonly #stale = (x: Expiry): boolean => this.#records.get(x.key) !== x.entry || x.entry.expiresAt !== x.expiresAt
  readonly #expiries = new ExpiryHeap<Expiry>(this.#stale)
  readonly #byOwner = new Map<string, ExpiryHeap<Expiry>>()

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
    this.#expire(`${owner}\0${requestId}`, r)
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
    this.#put(key, Object.assign(copyOf(r), { response, expiresAt: now + ttlMs, bytes }))
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
    this.#expiries.clear()
    this.#byOwner.clear()
  }

  /** Why `count` more records of `bytes` do not fit, with when space frees; undefined when they do. */
  #refusal(owner: string, count: number, bytes: number, now: number): QuotaExceeded | StoreFull | undefined {
    const L = this.limits
    const mine = () => this.#use(owner)
    const all = () => this.#total
    const overMine = () => mine().count + count > L.maxIdempotencyRecordsPerPrincipal || mine().bytes + bytes > L.maxIdempotencyBytesPerPrincipal
    const overAll = () => all().count + count > L.maxIdempotencyRecords || all().bytes + bytes > L.maxIdempotencyBytes
    for (let x = this.#expiries.takeExpired(now); x !== undefined; x = this.#expiries.takeExpired(now)) this.#drop(x.key, x.entry)
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
    const first = (owner === undefined ? this.#expiries : this.#byOwner.get(owner))?.first()
    return msUntil(first === undefined ? now + 1000 : first.expiresAt, now)
  }

  /** Keep `e`'s expiry as it is now; an earlier one of it goes stale (discarded if on top). */
  #expire(key: string, e: Entry): void {
    const x: Expiry = { key, entry: e, expiresAt: e.expiresAt }
    let mine = this.#byOwner.get(e.owner)
    if (mine === undefined) this.#byOwner.set(e.owner, (mine = new ExpiryHeap(this.#stale)))
    for (const heap of [this.#expiries, mine]) {
      heap.push(x)
      heap.first()
    }
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
    this.#expire(key, e)
  }

  #drop(key: string, e: Entry): void {
    this.#records.delete(key)
    for (const u of [this.#use(e.owner), this.#total]) {
      u.count--
      u.bytes -= e.bytes
    }
    if (this.#usage.get(e.owner)!.count === 0) this.#usage.delete(e.owner)
    // Its entries are stale now; the owner's that surface are discarded (no heap outgrows its records).
    if (this.#byOwner.get(e.owner)?.first() === undefined) this.#byOwner.delete(e.owner)
  }
}
