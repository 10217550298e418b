import { errors } from '../errors.js'

/**
 * Cursors are opaque to clients: base64url of `{k, o}` (list kind and offset). An unreadable cursor,
 * or one from another list, is 400 -32602, never a silent first page.
 */
export function encodeCursor(kind: string, offset: number): string {
  return Buffer.from(JSON.stringify({ k: kind, o: offset })).toString('base64url')
}

export function decodeCursor(kind: string, cursor: string | undefined): number {
  if (cursor === undefined) return 0
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw errors.invalidParams('Invalid cursor')
  }
  const { k, o } = (parsed ?? {}) as { k?: unknown; o?: unknown }
  if (k !== kind || typeof o !== 'number' || !Number.isSafeInteger(o) || o < 0) throw errors.invalidParams('Invalid cursor')
  return o
}
