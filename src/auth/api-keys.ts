import { createHash, timingSafeEqual } from 'node:crypto'
import type { Principal } from '../core/request-context.js'
import { ConfigurationError } from '../errors.js'

/**
 * One static API key: a client sending `Authorization: Bearer <key>` is `principal`, with `scopes`.
 * @example
 * const ci: ApiKey = { principal: 'ci', key: process.env.CI_KEY!, scopes: ['notes:read'] }
 */
export interface ApiKey {
  /** The principal's name, 1-128 of `A-Z a-z 0-9 . _ @ -`; its connection is `apikey:<name>`. */
  principal: string
  /** At least 32 characters of RFC 6750's b64token (`openssl rand -base64 32` makes one). */
  key: string
  /** What the key may do, as an OAuth token's `scope` (tool `scopes` are checked against it). */
  scopes?: readonly string[]
}

/** The principal a presented bearer credential is, or undefined when it is no key of the ring. */
export type KeyLookup = (presented: string) => Principal | undefined

export const MIN_KEY_LENGTH = 32
// No `|`: an OAuth principal is `<iss>|<sub>`, so `apikey:<name>` can never be one.
const NAME = /^[A-Za-z0-9._@-]{1,128}$/
// What `Authorization: Bearer` can carry (RFC 6750 b64token): no `:`, `,` or space, so entries parse.
const KEY = /^[A-Za-z0-9\-._~+/]+=*$/

const digest = (text: string) => createHash('sha256').update(text).digest()

/**
 * Check the keys (a {@link ConfigurationError} names the principal, never a key) and make the lookup.
 * Each presented credential is hashed and its digest compared with every key's digest in constant
 * time (`timingSafeEqual`), all of them every time: how long a lookup takes says nothing of which
 * key, or how much of one, it matched. Hashing first makes the lengths equal, which
 * `timingSafeEqual` needs, so the length of a key leaks no more than its bytes. (A Map keyed by the
 * digest would leak nothing useful either, SHA-256 being one-way; the loop makes the property
 * visible to a reader, and a server has a handful of keys.)
 */
export function apiKeyRing(keys: readonly ApiKey[]): KeyLookup {
  if (keys.length === 0) throw new ConfigurationError('API keys: the list is empty (leave the option out for no keys)')
  const names = new Set<string>()
  const ring: { digest: Buffer; principal: Principal }[] = []
  for (const [i, { principal: name, key, scopes = [] }] of keys.entries()) {
    // The position, not the name: a key pasted where the name goes must not reach the log.
    if (!NAME.test(name)) throw new ConfigurationError(`API keys: the principal of key ${i + 1} must be 1-128 of A-Z a-z 0-9 . _ @ -`)
    const who = `API keys: principal ${name}`
    if (names.has(name)) throw new ConfigurationError(`${who} has more than one key`)
    if (key.length < MIN_KEY_LENGTH) throw new ConfigurationError(`${who}: the key is shorter than ${MIN_KEY_LENGTH} characters`)
    if (!KEY.test(key)) throw new ConfigurationError(`${who}: the key may hold only A-Z a-z 0-9 - . _ ~ + / and trailing =`)
    const hash = digest(key)
    if (ring.some((r) => r.digest.equals(hash))) throw new ConfigurationError(`${who}: the same key as another principal`)
    if (scopes.some((s) => s === '' || /\s/.test(s))) throw new ConfigurationError(`${who}: a scope is empty or has a space in it`)
    names.add(name)
    ring.push({ digest: hash, principal: Object.freeze({ id: `apikey:${name}`, subject: name, scopes: Object.freeze([...scopes]), anonymous: false }) })
  }
  return (presented) => {
    const hash = digest(presented)
    let found: Principal | undefined
    for (const r of ring) if (timingSafeEqual(r.digest, hash)) found = r.principal
    return found
  }
}

/**
 * Keys written as text: entries `principal:key` or `principal:key:scope1 scope2`, separated by
 * commas or lines; blank lines and lines starting with `#` are skipped (`MCP_API_KEYS`, its file,
 * `--api-key`). `source` names where they came from in errors, which never quote an entry.
 */
export function parseApiKeys(text: string, source: string): ApiKey[] {
  const entries = text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .flatMap((line) => line.split(','))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  // Set but empty would be a server open to all where keys were meant.
  if (entries.length === 0) throw new ConfigurationError(`${source}: no key in it`)
  return entries.map((entry, i) => {
    // Scopes may hold colons (`notes:write`); a key holds none.
    const [principal, key, ...rest] = entry.split(':')
    if (key === undefined) throw new ConfigurationError(`${source}: entry ${i + 1} is not principal:key or principal:key:scopes`)
    const scopes = rest.join(':').split(/\s+/).filter((s) => s !== '')
    return { principal: principal!, key, ...(scopes.length === 0 ? {} : { scopes }) }
  })
}
