import t, { type Test } from 'tap'
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose'
import { McpError } from '../../src/errors.js'
import { DEFAULT_LIFETIME_MS, REFUSAL_MS, TokenExchanger, tokenUrlProblem, type TokenExchangeSpec } from '../../src/gateway/token-exchange.js'
import { authorizationServer, type AuthorizationServer } from '../helpers/token-exchange-server.js'
import { freePort } from '../helpers/redis-server.js'

const GATEWAY = 'https://gateway.example.test/mcp'
const UPSTREAM = 'https://tickets.example.test/mcp'

/** Every line logged in this file, the tokens issued and the client secrets: checked at the end. */
const logged: string[] = []
const secrets: string[] = []

function recorder() {
  const lines: string[] = []
  const write = (obj: unknown, msg?: string) => {
    lines.push(JSON.stringify({ ...(obj as object), msg }))
    logged.push(lines.at(-1)!)
  }
  return { lines, log: { debug: write, info: write, warn: write, error: write } }
}

async function setup(t: Test, spec: Partial<TokenExchangeSpec> = {}, options: { maxEntries?: number; timeoutMs?: number } = {}) {
  const as = await authorizationServer(t, { gatewayAudience: GATEWAY, upstreamAudience: UPSTREAM })
  const clock = { offset: 0 }
  const { lines, log } = recorder()
  const config: TokenExchangeSpec = { tokenUrl: as.tokenUrl, clientId: as.clientId, clientSecret: as.clientSecret, audience: UPSTREAM, ...spec }
  const exchanger = new TokenExchanger(config, 'tickets', log, { ...options, now: () => Date.now() + clock.offset })
  secrets.push(as.clientSecret)
  t.teardown(() => void secrets.push(...as.issued))
  return { as, exchanger, clock, lines }
}

const jwks = async (as: AuthorizationServer) => createLocalJWKSet((await (await fetch(as.jwksUrl)).json()) as JSONWebKeySet)

/** What `promise` is refused with: the error's name, status, message and data. */
async function refusal(promise: Promise<unknown>) {
  const err = await promise.then(() => undefined, (e: unknown) => e)
  if (!(err instanceof McpError)) throw new Error(`not refused with an McpError: ${String(err)}`)
  return { name: err.name, status: err.status, message: err.message, data: err.data }
}

t.test('the request is RFC 8693: grant, subject, token types, audience, resource, scope; client_secret_basic', async (t) => {
  const { as, exchanger } = await setup(t, { resource: 'https://tickets.example.test/', scope: 'tickets:read tickets:write' })
  const alice = await as.userToken('alice', GATEWAY)
  const token = await exchanger.accessTokenFor(alice)
  t.equal(as.exchanges, 1, 'the server accepted the client id and secret, form-encoded (a space, +, /, : and %)')
  const { form } = as.requests[0]!
  t.same(Object.fromEntries(form), {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    subject_token: alice,
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    audience: UPSTREAM,
    resource: 'https://tickets.example.test/',
    scope: 'tickets:read tickets:write'
  })
  t.match(as.requests[0]!.authorization, /^Basic [A-Za-z0-9+/]+=*$/)
  const { payload } = await jwtVerify(token, await jwks(as), { issuer: as.issuer, audience: UPSTREAM })
  t.equal(payload.sub, 'alice', "the upstream's token names the same user")
  t.notOk(token === alice)
})

t.test('kept per caller token: the same token again uses it, another user gets their own', async (t) => {
  const { as, exchanger } = await setup(t)
  const [alice, bob] = [await as.userToken('alice', GATEWAY), await as.userToken('bob', GATEWAY)]
  const first = await exchanger.accessTokenFor(alice)
  t.equal(await exchanger.accessTokenFor(alice), first)
  t.equal(as.exchanges, 1, 'one exchange for two requests of alice')
  const forBob = await exchanger.accessTokenFor(bob)
  t.not(forBob, first)
  t.equal(as.exchanges, 2)
  t.equal(exchanger.size, 2)
})

t.test('concurrent requests for one caller token share one exchange', async (t) => {
  const { as, exchanger } = await setup(t)
  const alice = await as.userToken('alice', GATEWAY)
  const tokens = await Promise.all([1, 2, 3, 4, 5].map(() => exchanger.accessTokenFor(alice)))
  t.equal(as.exchanges, 1)
  t.equal(new Set(tokens).size, 1)
})

t.test('kept until expires_in less a margin; without expires_in, 60 s; never past the caller token', async (t) => {
  const { as, exchanger, clock } = await setup(t)
  const alice = await as.userToken('alice', GATEWAY, {}, '1h')
  as.expiresIn = 100
  await exchanger.accessTokenFor(alice)
  clock.offset = 85_000
  await exchanger.accessTokenFor(alice)
  t.equal(as.exchanges, 1, 'at 85 s of 100: kept (the margin is 10 s for so short a life)')
  clock.offset = 91_000
  await exchanger.accessTokenFor(alice)
  t.equal(as.exchanges, 2, 'at 91 s: exchanged again')

  clock.offset = 0
  as.expiresIn = undefined
  const bob = await as.userToken('bob', GATEWAY, {}, '1h')
  await exchanger.accessTokenFor(bob)
  clock.offset = DEFAULT_LIFETIME_MS - 1000
  await exchanger.accessTokenFor(bob)
  t.equal(as.exchanges, 3, 'no expires_in: kept for 60 s')
  clock.offset = DEFAULT_LIFETIME_MS + 1000
  await exchanger.accessTokenFor(bob)
  t.equal(as.exchanges, 4, '...and not longer')

  clock.offset = 0
  as.expiresIn = 3600
  const carol = await as.userToken('carol', GATEWAY, {}, '2m')
  await exchanger.accessTokenFor(carol)
  clock.offset = 110_000
  await exchanger.accessTokenFor(carol)
  t.equal(as.exchanges, 5, "kept while carol's own token lasts")
  clock.offset = 121_000
  await exchanger.accessTokenFor(carol)
  t.equal(as.exchanges, 6, "not past carol's own token's exp, though the upstream's lasts an hour")

  clock.offset = 0
  const dave = await as.userToken('dave', GATEWAY, {}, null)
  await exchanger.accessTokenFor(dave)
  clock.offset = 3_000_000
  await exchanger.accessTokenFor(dave)
  t.equal(as.exchanges, 7, 'a caller token without exp bounds nothing')
})

t.test('at most maxEntries tokens: the least recently used goes', async (t) => {
  const { as, exchanger } = await setup(t, {}, { maxEntries: 2 })
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((s) => as.userToken(s, GATEWAY)))
  await exchanger.accessTokenFor(a!)
  await exchanger.accessTokenFor(b!)
  await exchanger.accessTokenFor(a!)
  await exchanger.accessTokenFor(c!)
  t.equal(exchanger.size, 2)
  t.equal(as.exchanges, 3)
  await exchanger.accessTokenFor(a!)
  t.equal(as.exchanges, 3, 'a, used last, was kept')
  await exchanger.accessTokenFor(b!)
  t.equal(as.exchanges, 4, 'b went')
})

t.test("the authorization server refuses the caller's token: 403 with its error code, never its words, kept a while", async (t) => {
  const { as, exchanger, lines, clock } = await setup(t)
  const mallory = await as.userToken('mallory', GATEWAY)
  t.same(await refusal(exchanger.accessTokenFor(mallory)), {
    name: 'MCP_ERR_TOKEN_EXCHANGE_REFUSED',
    status: 403,
    message: 'The authorization server refused a token for the upstream server tickets (invalid_grant)',
    data: { upstream: 'tickets', error: 'invalid_grant' }
  })
  const opaque = 'an-opaque-token-of-the-caller'
  const bad = await refusal(exchanger.accessTokenFor(opaque))
  t.same(bad.data, { upstream: 'tickets', error: 'invalid_request' })
  t.notOk(JSON.stringify(bad).includes(opaque), 'the description, which quotes the token, is not passed on')
  t.notOk(lines.join('\n').includes(opaque), 'nor logged')
  t.match(lines.join('\n'), /"error":"invalid_request".*"msg":"token exchange refused"/)
  // A refusal is kept a while: the caller's retries are refused at once, not asked again.
  const asked = as.requests.length
  t.match(await refusal(exchanger.accessTokenFor(mallory)), { status: 403, data: { error: 'invalid_grant' } })
  t.equal(as.requests.length, asked, 'the same token again: refused from memory')
  t.equal(exchanger.size, 2, 'the two refusals, kept')
  clock.offset += REFUSAL_MS
  t.match(await refusal(exchanger.accessTokenFor(mallory)), { status: 403, data: { error: 'invalid_grant' } })
  t.equal(as.requests.length, asked + 1, 'after REFUSAL_MS, asked again')

  const { exchanger: elsewhere, as: other } = await setup(t, { audience: 'https://elsewhere.example.test' })
  t.match(await refusal(elsewhere.accessTokenFor(await other.userToken('alice', GATEWAY))), { status: 403, data: { error: 'invalid_target' } })
})

t.test("failures that are not the caller's: 502 naming the upstream; the next request after the pause tries again", async (t) => {
  const { as, exchanger, clock } = await setup(t, {}, { timeoutMs: 500 })
  const alice = await as.userToken('alice', GATEWAY)
  const failed = (why: string) => ({ name: 'MCP_ERR_TOKEN_EXCHANGE_FAILED', status: 502, message: `Cannot get a token for the upstream server tickets: the authorization server ${why}` })
  const cases: [AuthorizationServer['mode'], string][] = [
    [{ kind: 'answer', status: 503, body: { error: 'temporarily_unavailable' } }, 'answered 503'],
    [{ kind: 'answer', status: 500, body: '<h1>oops</h1>' }, 'answered 500'],
    [{ kind: 'answer', status: 400, body: '<h1>bad</h1>' }, 'answered 400'],
    [{ kind: 'answer', status: 400, body: { error: 'x'.repeat(65) } }, 'answered 400'],
    [{ kind: 'answer', status: 400, body: { error: 'quo"te' } }, 'answered 400'],
    [{ kind: 'answer', status: 204, body: '' }, 'answered 204'],
    [{ kind: 'answer', status: 200, body: { token_type: 'Bearer' } }, 'answered without a Bearer access_token'],
    [{ kind: 'answer', status: 200, body: { access_token: 'two words', token_type: 'Bearer' } }, 'answered without a Bearer access_token'],
    [{ kind: 'answer', status: 200, body: { access_token: 'abc', token_type: 'N_A' } }, 'answered without a Bearer access_token'],
    [{ kind: 'answer', status: 200, body: { access_token: 'abc' } }, 'answered without a Bearer access_token'],
    [{ kind: 'answer', status: 200, body: { access_token: 'abc', token_type: 'Bearer', pad: 'x'.repeat(70_000) } }, 'answered without a Bearer access_token'],
    [{ kind: 'answer', status: 200, body: 'not json' }, 'answered without a Bearer access_token'],
    [{ kind: 'hang' }, 'did not answer in 0.5 s']
  ]
  for (const [mode, why] of cases) {
    as.mode = mode
    t.same(await refusal(exchanger.accessTokenFor(alice)), { ...failed(why), data: undefined }, why)
    clock.offset += 60_000 // past the pause (at most 60 s)
  }
  as.mode = { kind: 'exchange' }
  as.clientSecret = 'another secret'
  t.match(await refusal(exchanger.accessTokenFor(alice)), failed("refused the gateway's client (invalid_client)"), 'the gateway is misconfigured: not the caller\'s fault')
  const { exchanger: again, as: fine } = await setup(t)
  const bob = await fine.userToken('bob', GATEWAY)
  await again.accessTokenFor(bob)
  t.equal(fine.exchanges, 1, 'a working server, for the comparison below')
  const down = new TokenExchanger({ tokenUrl: `http://127.0.0.1:${await freePort()}/token`, clientId: 'x', clientSecret: 'y' }, 'tickets', recorder().log)
  t.match(await refusal(down.accessTokenFor(bob)), failed('cannot be reached'))
})

t.test('after a failure every exchange pauses: 1 s, doubling while it fails; a success ends it', async (t) => {
  const { as, exchanger, clock, lines } = await setup(t)
  const [alice, bob] = [await as.userToken('alice', GATEWAY), await as.userToken('bob', GATEWAY)]
  const failing = { kind: 'answer', status: 503, body: { error: 'temporarily_unavailable' } } as const
  as.mode = failing
  const asked = () => as.requests.length
  t.match(await refusal(exchanger.accessTokenFor(alice)), { status: 502, message: /answered 503$/ })
  t.equal(asked(), 1)
  t.match(await refusal(exchanger.accessTokenFor(bob)), { status: 502, message: /answered 503$/ }, 'another caller, during the pause: the same failure')
  t.equal(asked(), 1, 'not asked')
  t.match(lines.at(-1), /"pauseMs":1000/)
  clock.offset += 1000
  t.match(await refusal(exchanger.accessTokenFor(bob)), { status: 502 })
  t.equal(asked(), 2, 'after 1 s, tried again')
  t.match(lines.at(-1), /"pauseMs":2000/, 'still failing: twice the pause')
  clock.offset += 1500
  await refusal(exchanger.accessTokenFor(bob))
  t.equal(asked(), 2, 'within the 2 s')
  clock.offset += 500
  as.mode = { kind: 'exchange' }
  t.ok(await exchanger.accessTokenFor(bob), 'after it, a working server answers')
  t.equal(asked(), 3)
  as.mode = failing
  await refusal(exchanger.accessTokenFor(alice))
  t.match(lines.at(-1), /"pauseMs":1000/, 'a success ended the doubling')
  t.ok(await exchanger.accessTokenFor(bob), 'and a token kept is still served during a pause')
})

t.test('an answer with expires_in that is no positive number: the default lifetime', async (t) => {
  const { as, exchanger, clock } = await setup(t)
  as.mode = { kind: 'answer', status: 200, body: { access_token: 'abc.def', token_type: 'bearer', expires_in: -5 } }
  t.equal(await exchanger.accessTokenFor('opaque-subject'), 'abc.def', 'token_type is case-insensitive; an opaque caller token bounds nothing')
  clock.offset = DEFAULT_LIFETIME_MS - 1000
  as.mode = { kind: 'exchange' }
  t.equal(await exchanger.accessTokenFor('opaque-subject'), 'abc.def', 'kept')
})

t.test('tokenUrl: https, or http on a loopback host', async (t) => {
  t.equal(tokenUrlProblem('https://as.example.com/token'), undefined)
  t.equal(tokenUrlProblem('http://127.0.0.1:8080/token'), undefined)
  t.equal(tokenUrlProblem('http://localhost/token'), undefined)
  t.equal(tokenUrlProblem('http://as.example.com/token'), 'must use https (http only on a loopback host)')
  t.equal(tokenUrlProblem('ftp://127.0.0.1/token'), 'must use https (http only on a loopback host)')
  t.equal(tokenUrlProblem('not a url'), 'is not a URL')
})

t.test('no token and no client secret was ever logged', async (t) => {
  const text = logged.join('\n')
  t.ok(logged.length > 10, 'lines were logged')
  t.ok(secrets.length > 20, 'tokens were issued')
  t.notOk(secrets.some((s) => text.includes(s)))
})
