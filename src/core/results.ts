import type { Era } from '../protocol.js'
import type { CacheScope } from '../schema/common.js'

export interface CacheHints {
  /** How long a client may treat a list, read or discover result as fresh. Default 0. */
  ttlMs: number
  /** `private` (default): never share across authorization contexts; `public`: no user-specific data. */
  cacheScope: CacheScope
}

type Result = Record<string, unknown>

/** Stamp a result for its era: `resultType` (default "complete") in 2026-07-28, nothing before it. */
export function finish<T extends Result>(era: Era, result: T): T {
  if (era === 'modern') {
    if (result.resultType === undefined) (result as Result).resultType = 'complete'
  } else if (result.resultType === 'complete') {
    delete (result as Result).resultType
  }
  return result
}

/** As {@link finish}, plus `ttlMs`/`cacheScope` on a complete cacheable result in 2026-07-28. */
export function finishCacheable<T extends Result>(era: Era, result: T, hints: CacheHints): T {
  finish(era, result)
  if (era === 'modern' && result.resultType === 'complete') {
    const r = result as Result
    r.ttlMs ??= hints.ttlMs
    r.cacheScope ??= hints.cacheScope
  }
  return result
}
