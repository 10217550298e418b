import { QuotaExceeded, StoreFull } from './store-errors.js'
import { RECORD_OVERHEAD } from './limits.js'
import type { RedisCore } from './redis-core.js'
import type { IdempotencyStore, IdempotentStart } from './types.js'
import { REGISTRY } from './redis-keys.js'
import { Ledger } from './redis-ledger.js'

/** A ledger's answer (see `redis-scripts-registry.ts`): 'ok', or the bound reached, ms until space frees, the limit. */
type Verdict = [string, number?, string?]

/**
 * A {@link RedisStore}'s idempotency records: each on its own slot (`P i:{h:<requestId>}`), counted
 * in a ledger that bounds them over all owners (in shards by owner: see `redis-ledger.ts`).
 */
export class RedisIdempotency implements IdempotencyStore {
  readonly #r: RedisCore
  readonly ledger: Ledger

  constructor(core: RedisCore) {
    this.#r = core
    const L = core.limits
    this.ledger = new Ledger(core.keys.prefix, REGISTRY.idempotency, core.ledgerShards, [
      [L.maxIdempotencyRecords, L.maxIdempotencyRecordsPerPrincipal],
      [L.maxIdempotencyBytes, L.maxIdempotencyBytesPerPrincipal]
    ])
  }

  /**
   * The claim first (atomic on the record's slot), then its place in the index. Nothing is evicted to
   * make room (a running claim pushed out let its retry run the tool twice): a claim that does not
   * fit is withdrawn and refused.
   */
  async beginIdempotent(owner: string, requestId: string, digest: string, leaseMs: number): Promise<IdempotentStart> {
    const { key, member } = this.#r.keys.record('idempotency', owner, requestId)
    const [state, response] = (await this.#r.run('mcpBeginIdempotent', key, digest, leaseMs)) as [IdempotentStart['state'], string?]
    if (state === 'new') {
      const [verdict, ms, limit] = (await this.#indexIdempotent(member, leaseMs, RECORD_OVERHEAD + requestId.length + digest.length, 'claim')) as Verdict
      if (verdict !== 'ok') {
        await this.#r.run('mcpDel', key)
        throw verdict === 'quota' ? new QuotaExceeded('replayable tool calls', Number(limit), ms!) : new StoreFull('replayable tool calls', Number(limit), ms!)
      }
    }
    return state === 'done' ? { state, response: response! } : { state }
  }

  #indexIdempotent(member: string, ms: number, bytes: number, mode: 'claim' | 'finish' | 'renew' | 'drop'): Promise<unknown> {
    const [L, ledger] = [this.#r.limits, this.ledger]
    const k = ledger.shardOf(member)
    const bounds = [ledger.share(L.maxIdempotencyRecords, k), ledger.share(L.maxIdempotencyBytes, k), L.maxIdempotencyRecordsPerPrincipal, L.maxIdempotencyBytesPerPrincipal]
    return this.#r.run('mcpIndexIdempotent', ledger.key(k), member, ms, bytes, mode, ...bounds)
  }

  async renewIdempotent(owner: string, requestId: string, leaseMs: number): Promise<boolean> {
    const { key, member } = this.#r.keys.record('idempotency', owner, requestId)
    if ((await this.#r.run('mcpRenewIdempotent', key, leaseMs)) !== 1) return false
    await this.#indexIdempotent(member, leaseMs, 0, 'renew')
    return true
  }

  /** The index first: an outcome that does not fit (its owner's share, or the store's) is not kept, and a retry runs again. */
  async finishIdempotent(owner: string, requestId: string, response: string, ttlMs: number): Promise<void> {
    const { key, member } = this.#r.keys.record('idempotency', owner, requestId)
    const [verdict] = (await this.#indexIdempotent(member, ttlMs, RECORD_OVERHEAD + requestId.length + 64 + response.length, 'finish')) as Verdict
    if (verdict !== 'ok') {
      await this.#r.run('mcpDel', key)
      return
    }
    if ((await this.#r.write('mcpFinishIdempotent', key, response, ttlMs)) !== 1) await this.#indexIdempotent(member, 0, 0, 'drop')
  }

  async abandonIdempotent(owner: string, requestId: string): Promise<void> {
    const { key, member } = this.#r.keys.record('idempotency', owner, requestId)
    await Promise.all([this.#r.run('mcpDel', key), this.#indexIdempotent(member, 0, 0, 'drop')])
  }
}
