/**
 * A value now, or a promise of it later. The hot paths (a tool call, an MRTR round, a resolver plan)
 * return one: a step that can answer at once does, with no promise, no async frame and no turn of
 * the microtask queue, and continues through a promise only from the first step that must wait.
 * Awaiting either is correct; `.then` needs {@link isThenable} first.
 */
export type MaybePromise<T> = T | Promise<T>

/** True for anything `await` would wait on: a promise, or any object with a `then` method. */
export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function'
}
