import { digest } from '../hash.js'

/** A strong ETag derived from the bytes of a representation: it changes when and only when they do. */
export function etagOf(body: string): string {
  return `"${digest('sha1', body, 'base64url')}"`
}

/** RFC 9110 `If-None-Match`: true when the header names `etag` (weak comparison) or is `*`. */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  // A client revalidating sends back the ETag it was given, as it was given: no parsing.
  if (header === etag) return true
  if (header.trim() === '*') return true
  // Our ETags are strong; the header's may be weak (W/"..."), which weak comparison ignores.
  for (const part of header.split(',')) {
    const t = part.trim()
    if ((t.startsWith('W/') ? t.slice(2) : t) === etag) return true
  }
  return false
}
