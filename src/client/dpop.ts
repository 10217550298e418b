import { constants, createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, type JsonWebKey, type KeyObject } from 'node:crypto'

/**
 * A DPoP key pair (RFC 9449): the private key signs each request's proof, the public JWK travels in
 * it. The access token given with it must be bound to this key (`cnf.jkt`) by the authorization
 * server. Made with node:crypto alone: the client entry loads no dependency.
 */
export interface DpopKey {
  privateKey: KeyObject
  publicJwk: JsonWebKey
  /** The proofs' JWS algorithm: ES256, ES384, ES512, EdDSA, RS256 or PS256. */
  alg: string
}

/** How each algorithm signs with node:crypto: the digest, and the options of `crypto.sign`. */
const SIGNERS: Record<string, { digest: string | null; options: object }> = {
  ES256: { digest: 'sha256', options: { dsaEncoding: 'ieee-p1363' } },
  ES384: { digest: 'sha384', options: { dsaEncoding: 'ieee-p1363' } },
  ES512: { digest: 'sha512', options: { dsaEncoding: 'ieee-p1363' } },
  EdDSA: { digest: null, options: {} },
  RS256: { digest: 'sha256', options: {} },
  PS256: { digest: 'sha256', options: { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } }
}
const BY_CURVE: Record<string, string> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512', Ed25519: 'EdDSA' }
const CURVE_OF: Record<string, string> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' }

function keyOf(privateKey: KeyObject, alg: string): DpopKey {
  if (SIGNERS[alg] === undefined) throw new TypeError(`DPoP: algorithm ${alg} is not one of ${Object.keys(SIGNERS).join(', ')}`)
  return { privateKey, publicJwk: createPublicKey(privateKey).export({ format: 'jwk' }), alg }
}

/** A fresh key pair (ES256 unless told), for a client that generates its own. */
export function generateDpopKey(alg = 'ES256'): DpopKey {
  const curve = CURVE_OF[alg]
  const pair =
    curve !== undefined
      ? generateKeyPairSync('ec', { namedCurve: curve })
      : alg === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('rsa', { modulusLength: 2048 })
  return keyOf(pair.privateKey, alg)
}

/**
 * The key pair of a private JWK (the CLI's `--dpop-key` file): its `alg`, else ES256/384/512 or
 * EdDSA by its curve; an RSA key needs `alg`.
 * @example
 * import { readFileSync } from 'node:fs'
 * const dpop = dpopKeyFromJwk(JSON.parse(readFileSync('dpop-key.json', 'utf8')))
 * const client = new PureHttpClient({ url: 'https://mcp.example.com', token: process.env.MCP_TOKEN, dpop })
 */
export function dpopKeyFromJwk(jwk: JsonWebKey): DpopKey {
  if (typeof jwk.d !== 'string') throw new TypeError('DPoP: the key must be a private JWK (with "d")')
  const alg = (jwk.alg as string | undefined) ?? BY_CURVE[jwk.crv ?? '']
  if (alg === undefined) throw new TypeError('DPoP: the key needs "alg" (an RSA key), or a curve of P-256, P-384, P-521 or Ed25519')
  return keyOf(createPrivateKey({ key: jwk, format: 'jwk' }), alg)
}

const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/**
 * Proofs for one client: a fresh one for every request (new `jti`, `iat`, the request's method and
 * URL without query, `ath` of the token), with the server's latest `DPoP-Nonce` once it gave one.
 */
export class DpopProver {
  /** The last `DPoP-Nonce` the server sent. */
  nonce: string | undefined

  constructor(readonly key: DpopKey) {}

  proof(method: string, url: string, token: string): string {
    const { alg, publicJwk, privateKey } = this.key
    const claims = {
      jti: randomUUID(),
      htm: method,
      htu: url.replace(/[?#].*$/s, ''),
      iat: Math.floor(Date.now() / 1000),
      ath: createHash('sha256').update(token).digest('base64url'),
      ...(this.nonce === undefined ? {} : { nonce: this.nonce })
    }
    const input = `${part({ typ: 'dpop+jwt', alg, jwk: publicJwk })}.${part(claims)}`
    const signer = SIGNERS[alg]!
    return `${input}.${sign(signer.digest, Buffer.from(input), { key: privateKey, ...signer.options }).toString('base64url')}`
  }

  /**
   * Remember the answer's `DPoP-Nonce`, if any. True for a 401 `use_dpop_nonce` that brought one
   * (RFC 9449 section 9): the request is worth sending again with it.
   */
  heard(answer: Response): boolean {
    const nonce = answer.headers.get('dpop-nonce')
    if (nonce === null) return false
    this.nonce = nonce
    return answer.status === 401 && /error="use_dpop_nonce"/.test(answer.headers.get('www-authenticate') ?? '')
  }
}
