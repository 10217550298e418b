import t from 'tap'
import { createCipheriv, randomBytes } from 'node:crypto'
import { CompactEncrypt, compactDecrypt } from 'jose'
import { StateSealer, canonicalJson, digestArguments, type SealBinding } from '../../src/mrtr/seal.js'

const key = (kid: string) => ({ kid, key: randomBytes(32) })
const binding: SealBinding = { principal: 'alice', method: 'tools/call', target: 'update_work_item', args: digestArguments({ id: 1 }) }

function capture() {
  const lines: { reason: string }[] = []
  const log = { debug() {}, info() {}, error() {}, warn: (o: unknown) => lines.push(o as { reason: string }) }
  return { log, lines }
}

t.test('seal and open round-trip; the token says nothing readable', async (t) => {
  const s = new StateSealer([key('k1')])
  const token = s.seal(binding, { secret: 'resolution=Duplicate' })
  t.notMatch(Buffer.from(token.split('.')[3]!, 'base64url').toString('latin1'), /Duplicate|alice/)
  t.same(s.open(token, binding, capture().log), { secret: 'resolution=Duplicate' })
  t.not(s.seal(binding, 1), s.seal(binding, 1), 'a fresh IV every time')
})

t.test('every binding claim is checked, with the reason in the log only', async (t) => {
  const s = new StateSealer([key('k1')])
  const token = s.seal(binding, 'x')
  const cases: [Partial<SealBinding>, RegExp][] = [
    [{ principal: 'mallory' }, /another principal/],
    [{ method: 'prompts/get' }, /moved from tools\/call update_work_item/],
    [{ target: 'delete_everything' }, /moved from/],
    [{ args: digestArguments({ id: 2 }) }, /arguments changed/]
  ]
  for (const [change, reason] of cases) {
    const { log, lines } = capture()
    t.throws(() => s.open(token, { ...binding, ...change }, log), { code: -32602, status: 400, message: 'Invalid or expired requestState' })
    t.match(lines[0]?.reason, reason)
  }
})

t.test('tampering, expiry, unknown keys, oversize', async (t) => {
  const s = new StateSealer([key('k1')], { ttlMs: 60_000, maxBytes: 2048 })
  const token = s.seal(binding, { a: 1 })
  const parts = token.split('.')
  const flip = (i: number) => {
    const p = [...parts]
    const b = Buffer.from(p[i]!, 'base64url')
    b[b.length - 1]! ^= 1
    p[i] = b.toString('base64url')
    return p.join('.')
  }
  for (const [i, what] of [[0, 'header'], [2, 'iv'], [3, 'ciphertext'], [4, 'tag']] as const) {
    const { log, lines } = capture()
    t.throws(() => s.open(flip(i), binding, log), { message: 'Invalid or expired requestState' }, what)
    t.match(lines[0]?.reason, /does not open/, what)
  }
  const garbage = ['', 'a.b.c', `${parts[0]}.x.${parts[2]}.${parts[3]}.${parts[4]}`, 'x'.repeat(100)]
  for (const g of garbage) t.throws(() => s.open(g, binding, capture().log), { message: 'Invalid or expired requestState' })
  const { log, lines } = capture()
  t.throws(() => s.open('x'.repeat(2049), binding, log))
  t.match(lines[0]?.reason, /over the limit/)
  const expired = s.seal(binding, 1, -1)
  const e = capture()
  t.throws(() => s.open(expired, binding, e.log))
  t.same(e.lines[0]?.reason, 'expired')
  const other = new StateSealer([key('k2')])
  const k = capture()
  t.throws(() => other.open(token, binding, k.log))
  t.match(k.lines[0]?.reason, /unknown kid k1/)
})

t.test('key rotation: the first key seals, every key opens', async (t) => {
  const oldKey = key('2026-10')
  const newKey = key('2026-11')
  const before = new StateSealer([oldKey])
  const during = new StateSealer([newKey, oldKey])
  const after = new StateSealer([newKey])
  const oldToken = before.seal(binding, 'old')
  t.equal(during.open(oldToken, binding, capture().log), 'old', 'tokens of the old key still open during rotation')
  const newToken = during.seal(binding, 'new')
  t.match(JSON.parse(Buffer.from(newToken.split('.')[0]!, 'base64url').toString()), { kid: '2026-11' })
  t.equal(after.open(newToken, binding, capture().log), 'new')
  t.throws(() => after.open(oldToken, binding, capture().log), 'the retired key no longer opens')
})

t.test('the tokens are standard JWEs: jose reads ours and we read jose\'s', async (t) => {
  const k = key('interop')
  const s = new StateSealer([k])
  const ours = s.seal(binding, { n: 42 })
  const { plaintext, protectedHeader } = await compactDecrypt(ours, k.key)
  t.same(protectedHeader, { alg: 'dir', enc: 'A256GCM', kid: 'interop' })
  t.match(JSON.parse(new TextDecoder().decode(plaintext)), { p: 'alice', m: 'tools/call', d: { n: 42 } })
  const body = { v: 1, p: 'alice', m: 'tools/call', t: 'update_work_item', a: binding.args, exp: Date.now() + 60_000, d: 'from jose' }
  const theirs = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(body)))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'interop' })
    .encrypt(k.key)
  t.equal(s.open(theirs, binding, capture().log), 'from jose')
  // The same header spelled another way (not the bytes this server writes) is parsed, and opens.
  const reordered = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(body)))
    .setProtectedHeader({ kid: 'interop', enc: 'A256GCM', alg: 'dir' })
    .encrypt(k.key)
  t.not(reordered.split('.')[0], ours.split('.')[0])
  t.equal(s.open(reordered, binding, capture().log), 'from jose')
  const zipped = await new CompactEncrypt(new TextEncoder().encode('{}'))
    .setProtectedHeader({ alg: 'dir', enc: 'A128GCM', kid: 'interop' })
    .encrypt(randomBytes(16))
  t.throws(() => s.open(zipped, binding, capture().log), 'other algorithms are refused')
})

/** A compact dir/A256GCM JWE with any header, body and IV length: what a forger with the key could make. */
function rawJwe(header: object, body: object, key: Uint8Array, ivLength = 12): string {
  const h = Buffer.from(JSON.stringify(header)).toString('base64url')
  const iv = randomBytes(ivLength)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(h, 'ascii'))
  const ct = Buffer.concat([cipher.update(JSON.stringify(body)), cipher.final()])
  return `${h}..${iv.toString('base64url')}.${ct.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`
}

t.test('well-encrypted tokens are still refused when their header or format is not ours', async (t) => {
  const k = key('k')
  const s = new StateSealer([k])
  const body = { v: 1, p: 'alice', m: 'tools/call', t: 'update_work_item', a: binding.args, exp: Date.now() + 60_000, d: 'x' }
  t.equal(s.open(rawJwe({ alg: 'dir', enc: 'A256GCM', kid: 'k' }, body, k.key), binding, capture().log), 'x', 'the helper makes valid tokens')
  const cases: [string, string, RegExp][] = [
    ['crit', rawJwe({ alg: 'dir', enc: 'A256GCM', kid: 'k', crit: ['x'], x: 1 }, body, k.key), /unsupported header parameters/],
    ['zip', rawJwe({ alg: 'dir', enc: 'A256GCM', kid: 'k', zip: 'DEF' }, body, k.key), /unsupported header parameters/],
    ['kid not a string', rawJwe({ alg: 'dir', enc: 'A256GCM', kid: 7 }, body, k.key), /unknown kid 7/],
    ['no kid', rawJwe({ alg: 'dir', enc: 'A256GCM' }, body, k.key), /unknown kid undefined/],
    ['short iv', rawJwe({ alg: 'dir', enc: 'A256GCM', kid: 'k' }, body, k.key, 8), /bad iv or tag length/],
    ['another format', rawJwe({ alg: 'dir', enc: 'A256GCM', kid: 'k' }, { ...body, v: 2 }, k.key), /unknown format/]
  ]
  for (const [name, token, reason] of cases) {
    const { log, lines } = capture()
    t.throws(() => s.open(token, binding, log), { message: 'Invalid or expired requestState' }, name)
    t.match(lines[0]?.reason, reason, name)
  }
})

t.test('key configuration', async (t) => {
  const text = `a:${randomBytes(32).toString('base64url')}, b:${randomBytes(32).toString('base64url')}`
  t.same(StateSealer.parseKeys(text).map((k) => [k.kid, k.key.length]), [['a', 32], ['b', 32]])
  t.throws(() => StateSealer.parseKeys('nokid'), /kid:base64url-key/)
  t.throws(() => new StateSealer([{ kid: 'short', key: randomBytes(16) }]), /must be 32 bytes/)
  t.equal(new StateSealer(undefined).ephemeral, true)
  t.equal(new StateSealer([key('x')]).ephemeral, false)
})

t.test('argument digests ignore key order', async (t) => {
  t.equal(digestArguments({ a: 1, b: [1, { c: 2, d: null }] }), digestArguments({ b: [1, { d: null, c: 2 }], a: 1 }))
  t.not(digestArguments({ a: 1 }), digestArguments({ a: '1' }))
  t.equal(canonicalJson({ b: 1, a: undefined }), '{"a":null,"b":1}')
})

t.test('form schemas are compiled once each, with a bounded cache', async (t) => {
  const { checkResponse } = await import('../../src/mrtr/responses.js')
  for (let i = 0; i < 502; i++) {
    const schema = { type: 'object', properties: { [`f${i}`]: { type: 'integer' } }, required: [`f${i}`] }
    // A question's digest covers its schema; every other one is looked up by its text only.
    const asked = { m: 'elicitation/create', h: i % 2 === 0 ? `d${i}` : '', s: schema }
    t.doesNotThrow(() => checkResponse('inputResponses["k"]', asked, { action: 'accept', content: { [`f${i}`]: i } }))
    if (i % 100 === 0) t.throws(() => checkResponse('inputResponses["k"]', asked, { action: 'accept', content: { [`f${i}`]: 'no' } }), /content\.f\d+ must be integer/)
  }
  // Known by digest after its text left the bounded cache: still its own schema, not another's.
  const first = { m: 'elicitation/create', h: 'd0', s: { type: 'object', properties: { f0: { type: 'integer' } }, required: ['f0'] } }
  t.throws(() => checkResponse('inputResponses["k"]', first, { action: 'accept', content: { f0: 'no' } }), /content\.f0 must be integer/)
  t.throws(() => checkResponse('inputResponses["k"]', first, { action: 'accept', content: { f2: 2 } }), /content\.f0 is required/)
})

t.test('form validators by digest: bounded, the oldest digest forgotten first', async (t) => {
  const { checkResponse } = await import('../../src/mrtr/responses.js')
  const schema = (field: string) => ({ type: 'object', properties: { [field]: { type: 'integer' } }, required: [field] })
  // A digest stands for its schema: while 'old' is known, its first schema answers for it.
  checkResponse('r', { m: 'elicitation/create', h: 'old', s: schema('a') }, { action: 'accept', content: { a: 1 } })
  const asOld = { m: 'elicitation/create', h: 'old', s: schema('b') }
  t.throws(() => checkResponse('r', asOld, { action: 'accept', content: { b: 1 } }), /content\.a is required/, 'known by its digest')
  // 4096 digests later (the bound), 'old' is gone: its schema is read from the question again.
  const other = { m: 'elicitation/create', s: schema('c') }
  for (let i = 0; i < 4096; i++) checkResponse('r', { ...other, h: `new${i}` }, { action: 'accept', content: { c: i } })
  t.doesNotThrow(() => checkResponse('r', asOld, { action: 'accept', content: { b: 1 } }), 'forgotten')
})
