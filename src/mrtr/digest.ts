import { digest } from '../hash.js'

/** A stable digest of a JSON value: object keys sorted, so `{a, b}` and `{b, a}` agree. */
export function digestArguments(value: unknown): string {
  return digest('sha256', canonicalJson(value), 'base64url')
}

export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null'
  // Concatenation rather than map/join: this runs on every question of every multi round-trip round.
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(value[i])
    return out + ']'
  }
  const keys = Object.keys(value).sort()
  let out = '{'
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!
    out += (i === 0 ? '' : ',') + JSON.stringify(k) + ':' + canonicalJson((value as Record<string, unknown>)[k])
  }
  return out + '}'
}
