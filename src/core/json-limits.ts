/**
 * What every JSON value a client sends must satisfy before any code walks it (canonical digests,
 * schema validation, the store's copies): nesting no deeper than {@link MAX_JSON_DEPTH}, no
 * `__proto__` key (an `Object.assign` or a `for...in` copy would turn it into a prototype), and
 * finite numbers only (`1e309` parses to `Infinity`, which JSON cannot write back).
 */

/** The deepest nesting accepted in a body or a JSON header (objects and arrays, the outermost is 1). */
export const MAX_JSON_DEPTH = 64

/**
 * Why a parsed JSON value is refused, as the end of a sentence ("nested deeper than 64 levels"),
 * or undefined when it is acceptable. The walk stops at the limit, so its own recursion is bounded.
 * V8's `JSON.parse` is not recursive, so parsing first and checking after is safe at any depth.
 * @example
 * jsonProblem(JSON.parse('{"__proto__":{}}')) // 'has the key "__proto__", which is refused'
 */
export function jsonProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): string | undefined {
  return walk(value, 0, maxDepth)
}

function walk(value: unknown, depth: number, max: number): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : 'has a number out of range (numbers must be finite)'
  if (typeof value !== 'object' || value === null) return undefined
  if (depth === max) return `is nested deeper than ${max} levels (the limit)`
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = walk(value[i], depth + 1, max)
      if (problem !== undefined) return problem
    }
    return undefined
  }
  for (const key of Object.keys(value)) {
    if (key === '__proto__') return 'has the key "__proto__", which is refused'
    const problem = walk((value as Record<string, unknown>)[key], depth + 1, max)
    if (problem !== undefined) return problem
  }
  return undefined
}

/**
 * `obj[key]` for a key a client chose, without the prototype chain: `toString` or `constructor`
 * name nothing unless the object has them itself.
 */
export function ownValue<T>(obj: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return obj !== undefined && Object.hasOwn(obj, key) ? obj[key] : undefined
}
