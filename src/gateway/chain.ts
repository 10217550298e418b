/** What a {@link Chain} links its items through. */
export interface Linked<T> {
  before: T | undefined
  after: T | undefined
}

/**
 * The items in flight (an upstream's calls, their deadlines), in the order they came, linked through
 * the items themselves. Not a Map or a Set: as entries come and go, V8 replaces their tables and keeps
 * the previous one, entries and all, until a full collection; in the old generation, that table kept
 * every ended entry and all it reached alive through the scavenges, and under load each request the
 * gateway served was promoted that way (see UpstreamCall's end). A removed item lets go of its
 * neighbours.
 */
export class Chain<T extends Linked<T>> {
  #head: T | undefined = undefined
  #tail: T | undefined = undefined

  add(item: T): void {
    item.before = this.#tail
    item.after = undefined
    if (this.#tail === undefined) this.#head = item
    else this.#tail.after = item
    this.#tail = item
  }

  /** Take `item` out (nothing when it is not in). */
  delete(item: T): void {
    if (item.before !== undefined) item.before.after = item.after
    else if (this.#head === item) this.#head = item.after
    else return
    if (item.after !== undefined) item.after.before = item.before
    else this.#tail = item.before
    item.before = item.after = undefined
  }

  /** The items, oldest first; an item deleted meanwhile ends the walk (copy first: `[...chain]`). */
  * [Symbol.iterator](): Generator<T> {
    for (let item = this.#head; item !== undefined; item = item.after) yield item
  }
}
