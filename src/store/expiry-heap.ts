/**
 * Items ordered by when they expire (a binary min-heap on `expiresAt`, which must not change while
 * an item is in it). Nothing is removed from the middle: an item that no longer belongs (`stale`)
 * is discarded when it reaches the top. So the earliest live expiry and the items that have
 * expired cost O(log n) each, where walking every item cost O(n) a call. The expiries are kept
 * beside the items, in an array of numbers, so that sifting compares without reading the items.
 */
export class ExpiryHeap<T extends { readonly expiresAt: number }> {
  readonly #items: T[] = []
  readonly #at: number[] = []

  constructor(readonly stale: (item: T) => boolean) {}

  /** Entries held, stale ones not yet discarded included. */
  get size(): number {
    return this.#items.length
  }

  push(item: T): void {
    const items = this.#items
    const at = this.#at
    const when = item.expiresAt
    let i = items.length
    items.push(item)
    at.push(when)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (at[parent]! <= when) break
      items[i] = items[parent]!
      at[i] = at[parent]!
      i = parent
    }
    items[i] = item
    at[i] = when
  }

  /** The live item that expires first; stale ones above it are discarded on the way. */
  first(): T | undefined {
    const items = this.#items
    while (items.length > 0 && this.stale(items[0]!)) this.#pop()
    return items[0]
  }

  /** The first live item when it has expired by `now`, taken out; else undefined. */
  takeExpired(now: number): T | undefined {
    const top = this.first()
    if (top === undefined || this.#at[0]! > now) return undefined
    this.#pop()
    return top
  }

  clear(): void {
    this.#items.length = 0
    this.#at.length = 0
  }

  #pop(): void {
    const items = this.#items
    const at = this.#at
    const last = items.pop()!
    const when = at.pop()!
    const n = items.length
    if (n === 0) return
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const c = l + 1 < n && at[l + 1]! < at[l]! ? l + 1 : l
      if (at[c]! >= when) break
      items[i] = items[c]!
      at[i] = at[c]!
      i = c
    }
    items[i] = last
    at[i] = when
  }
}
