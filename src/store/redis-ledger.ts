import { REGISTRY } from './redis-keys.js'

/**
 * The ledgers that bound tasks and idempotency records over all owners, in shards so that a Redis
 * Cluster spreads them over its masters (one slot's script runs on one Redis thread: a single
 * ledger capped task creation at 15-19k a second whatever the cluster's size).
 *
 * An owner's records all go to one shard, chosen by the owner's hash, and that shard keeps the
 * owner's quotas as the single ledger did: exact. Each shard keeps a share of the store-wide bounds
 * (`floor(L / S)`, the first `L mod S` shards one more), so the shares add up to the bound: the store
 * never holds more than it. The error is on the other side: a creation is refused (503, with when that
 * shard frees space) once its owner's shard holds its share, though other shards may still have room.
 * So the store may refuse while it holds as little as 1/S of a bound, when a few owners fill one shard;
 * owners spread by hash fill the shards alike. The shards are at most as many as keep every share at
 * least one owner's whole quota (`L / perOwner`), so that an owner alone on its shard never meets the
 * store's bound before its own; with the defaults that is 8.
 *
 * One shard (the default off a cluster, or when the bounds leave no room for more) is the registry
 * slot's ledger `P {g}:<name>`, exact as before. Shard k of S is `P {g<k>.<j>}:<name>`: the first j
 * whose slot lies in the k-th S-th of the 16384 slots, so that the shards spread evenly over masters
 * that hold ranges of slots (as `redis-cli --cluster create` assigns them).
 */
export class Ledger {
  /** The shards' hash tags (`{...}:`). */
  readonly #tags: string[]

  constructor(
    readonly prefix: string,
    readonly name: string,
    /** How many shards at most (the store's `ledgerShards`). */
    most: number,
    /** Each store-wide bound with its per-owner quota. */
    bounds: readonly (readonly [all: number, perOwner: number])[]
  ) {
    const shards = Math.max(1, Math.min(most, ...bounds.map(([all, one]) => Math.floor(all / one))))
    this.#tags = shards === 1 ? [REGISTRY.tag] : Array.from({ length: shards }, (_, k) => shardTag(k, shards))
  }

  get shards(): number {
    return this.#tags.length
  }

  /** The shard of an owner (by its tag `h`, the SHA-1 in hex). */
  shardOf(h: string): number {
    return parseInt(h.slice(0, 8), 16) % this.#tags.length
  }

  /** Shard k's ledger key. */
  key(k: number): string {
    return `${this.prefix}${this.#tags[k]}${this.name}`
  }

  /** Shard k's share of a store-wide bound. */
  share(all: number, k: number): number {
    const S = this.#tags.length
    return Math.floor(all / S) + (k < all % S ? 1 : 0)
  }
}

const SLOTS = 16384

/** `{g<k>.<j>}:` for the first j whose slot is in the k-th of S equal ranges of slots. */
function shardTag(k: number, S: number): string {
  const [lo, hi] = [Math.floor((k * SLOTS) / S), Math.floor(((k + 1) * SLOTS) / S)]
  const inRange = (j: number) => {
    const slot = keySlot(`g${k}.${j}`)
    return slot >= lo && slot < hi
  }
  let j = 0
  while (!inRange(j)) j++
  return `{g${k}.${j}}:`
}

/** Redis Cluster's slot of a hash tag's text: CRC16 (XMODEM) mod 16384. */
export function keySlot(s: string): number {
  let crc = 0
  for (const b of Buffer.from(s, 'utf8')) {
    crc ^= b << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % SLOTS
}
