import * as crypto from 'node:crypto'

type Encoding = 'hex' | 'base64url'

/**
 * A one-shot digest of a string. `crypto.hash` (Node 20.12 and later) makes no Hash object: about
 * a quarter of `createHash().update().digest()`'s time on the short inputs of a request (an ETag,
 * an argument digest, a Redis key's hash tag); before it, the Hash object.
 */
export const digest: (algorithm: 'sha1' | 'sha256', data: string, encoding: Encoding) => string =
  typeof crypto.hash === 'function'
    ? (algorithm, data, encoding) => crypto.hash(algorithm, data, encoding)
    : /* c8 ignore next: Node 20 before 20.12 only */ (algorithm, data, encoding) => crypto.createHash(algorithm).update(data).digest(encoding)
