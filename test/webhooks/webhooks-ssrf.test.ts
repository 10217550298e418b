import { isIP } from 'node:net'
import t from 'tap'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { Sender } from '../../src/webhooks/deliver.js'
import { MemoryWebhookStore } from '../../src/webhooks/memory.js'
import { checkName, checkUrl, guardLookup, guardedLookup, isAllowedHost, refusedAddress, type Resolve } from '../../src/webhooks/ssrf.js'
import { build, call } from '../helpers/helper.js'
import { startReceiver } from '../helpers/webhook-receiver.js'

// One row per address: the rule that refuses it (undefined: allowed), and where the rule comes from:
// the IANA IPv4 and IPv6 Special-Purpose Address Registries (their blocks not globally reachable),
// the multicast and address-architecture registries, cloud metadata, and the IPv6 forms that carry
// an IPv4 address. Both edges of a block where an off-by-one would show.
const TABLE: [string, string | undefined, string][] = [
  // IPv4 Special-Purpose Address Registry
  ['0.0.0.0', 'unspecified', '0.0.0.0/8 "this network" (RFC 791)'],
  ['0.255.255.255', 'unspecified', '0.0.0.0/8'],
  ['10.0.0.1', 'private', '10.0.0.0/8 private-use (RFC 1918)'],
  ['10.255.255.255', 'private', '10.0.0.0/8'],
  ['100.64.0.1', 'CGNAT', '100.64.0.0/10 shared address space (RFC 6598)'],
  ['100.127.255.254', 'CGNAT', '100.64.0.0/10'],
  ['100.63.255.255', undefined, 'just below 100.64.0.0/10'],
  ['100.128.0.0', undefined, 'just above 100.64.0.0/10'],
  ['127.0.0.1', 'loopback', '127.0.0.0/8 loopback (RFC 1122)'],
  ['127.8.8.8', 'loopback', '127.0.0.0/8'],
  ['169.254.1.1', 'link-local', '169.254.0.0/16 link local (RFC 3927)'],
  ['172.16.5.4', 'private', '172.16.0.0/12 private-use'],
  ['172.31.255.255', 'private', '172.16.0.0/12'],
  ['172.15.255.255', undefined, 'just below 172.16.0.0/12'],
  ['172.32.0.0', undefined, 'just above 172.16.0.0/12'],
  ['192.0.0.1', 'reserved', '192.0.0.0/24 IETF protocol assignments (RFC 6890)'],
  ['192.0.0.9', 'reserved', '192.0.0.9/32 PCP anycast: global, refused with its block'],
  ['192.0.0.170', 'reserved', '192.0.0.170/32 NAT64/DNS64 discovery'],
  ['192.0.2.1', 'documentation', '192.0.2.0/24 TEST-NET-1 (RFC 5737)'],
  ['192.31.196.1', undefined, '192.31.196.0/24 AS112-v4: globally reachable'],
  ['192.52.193.1', undefined, '192.52.193.0/24 AMT: globally reachable'],
  ['192.88.99.1', 'reserved', '192.88.99.0/24 deprecated 6to4 relay anycast (RFC 7526)'],
  ['192.168.1.1', 'private', '192.168.0.0/16 private-use'],
  ['192.175.48.1', undefined, '192.175.48.0/24 direct delegation AS112: globally reachable'],
  ['198.18.0.1', 'benchmarking', '198.18.0.0/15 benchmarking (RFC 2544)'],
  ['198.19.255.255', 'benchmarking', '198.18.0.0/15'],
  ['198.20.0.0', undefined, 'just above 198.18.0.0/15'],
  ['198.51.100.7', 'documentation', '198.51.100.0/24 TEST-NET-2'],
  ['203.0.113.9', 'documentation', '203.0.113.0/24 TEST-NET-3'],
  ['240.0.0.1', 'reserved', '240.0.0.0/4 reserved (RFC 1112)'],
  ['255.255.255.254', 'reserved', '240.0.0.0/4'],
  ['255.255.255.255', 'broadcast', '255.255.255.255/32 limited broadcast (RFC 919)'],
  // IPv4 multicast address space registry
  ['224.0.0.251', 'multicast', '224.0.0.0/4 multicast (RFC 5771)'],
  ['239.255.255.250', 'multicast', '224.0.0.0/4'],
  // Cloud metadata services
  ['169.254.169.254', 'cloud metadata', 'AWS, GCP, Azure, ... instance metadata'],
  ['100.100.100.200', 'cloud metadata', 'Alibaba Cloud metadata'],
  ['168.63.129.16', 'cloud metadata', 'Azure wire server (a public address)'],
  ['fd00:ec2::254', 'cloud metadata', 'AWS metadata over IPv6'],
  // Public IPv4
  ['93.184.216.34', undefined, 'public'],
  ['8.8.8.8', undefined, 'public'],
  // IPv6 Special-Purpose Address Registry
  ['::', 'unspecified', '::/128 unspecified (RFC 4291)'],
  ['::1', 'loopback', '::1/128 loopback (RFC 4291)'],
  ['::ffff:127.0.0.1', 'loopback (IPv4-mapped 127.0.0.1)', '::ffff:0:0/96 IPv4-mapped (RFC 4291)'],
  ['::ffff:7f00:1', 'loopback (IPv4-mapped 127.0.0.1)', '::ffff:0:0/96, hex form'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'cloud metadata (IPv4-mapped 169.254.169.254)', '::ffff:0:0/96, uncompressed'],
  ['::ffff:10.1.2.3', 'private (IPv4-mapped 10.1.2.3)', '::ffff:0:0/96'],
  ['::ffff:192.0.2.1', 'documentation (IPv4-mapped 192.0.2.1)', '::ffff:0:0/96'],
  ['::ffff:8.8.8.8', undefined, '::ffff:0:0/96 with a public IPv4 address'],
  ['64:ff9b::a9fe:a9fe', 'cloud metadata (NAT64 169.254.169.254)', '64:ff9b::/96 IPv4-IPv6 translation (RFC 6052)'],
  ['64:ff9b::10.0.0.1', 'private (NAT64 10.0.0.1)', '64:ff9b::/96'],
  ['64:ff9b::808:808', undefined, '64:ff9b::/96 with a public IPv4 address'],
  ['64:ff9b:1::1', 'private', '64:ff9b:1::/48 local-use IPv4-IPv6 translation (RFC 8215)'],
  ['100::1', 'reserved', '100::/64 discard-only (RFC 6666)'],
  ['100:0:0:1::1', 'not global unicast', '100:0:0:1::/64 dummy IPv6 prefix (RFC 9780)'],
  ['2001::1', 'Teredo', '2001::/32 Teredo (RFC 4380)'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo', '2001::/32, RFC 4380\'s example (client 192.0.2.45)'],
  ['2001:1::1', 'reserved', '2001:1::1/128 PCP anycast: global, refused with 2001::/23'],
  ['2001:2::1', 'benchmarking', '2001:2::/48 benchmarking (RFC 5180)'],
  ['2001:3::1', 'reserved', '2001:3::/32 AMT: global, refused with 2001::/23'],
  ['2001:10::1', 'reserved', '2001:10::/28 deprecated ORCHID (RFC 4843)'],
  ['2001:20::1', 'reserved', '2001:20::/28 ORCHIDv2 (RFC 7343): identifiers, not locators'],
  ['2001:1ff:ffff::1', 'reserved', '2001::/23, its last /32'],
  ['2001:200::1', undefined, 'just above 2001::/23: global unicast'],
  ['2001:db8::1', 'documentation', '2001:db8::/32 documentation (RFC 3849)'],
  ['2002:7f00:1::1', 'loopback (6to4 127.0.0.1)', '2002::/16 6to4 (RFC 3056)'],
  ['2002:a9fe:a9fe::', 'cloud metadata (6to4 169.254.169.254)', '2002::/16'],
  ['2002:c000:201::1', 'documentation (6to4 192.0.2.1)', '2002::/16'],
  ['2002:808:808::1', undefined, '2002::/16 with a public IPv4 address'],
  ['2620:4f:8000::1', undefined, '2620:4f:8000::/48 direct delegation AS112: globally reachable'],
  ['3fff::1', 'documentation', '3fff::/20 documentation (RFC 9637)'],
  ['3fff:fff:ffff::1', 'documentation', '3fff::/20, its end'],
  ['3fff:1000::1', undefined, 'just above 3fff::/20: global unicast'],
  ['5f00::1', 'not global unicast', '5f00::/16 SRv6 SIDs (RFC 9602)'],
  ['fc00::1', 'private', 'fc00::/7 unique local (RFC 4193)'],
  ['fd12::1', 'private', 'fc00::/7'],
  ['fe80::1', 'link-local', 'fe80::/10 link-local unicast (RFC 4291)'],
  ['fe80::1%eth0', 'link-local', 'fe80::/10 with a zone, as a resolver may answer'],
  ['febf::1', 'link-local', 'fe80::/10, its end'],
  // IPv6 address architecture (RFC 4291, 3879) and multicast registry
  ['fec0::1', 'site-local', 'fec0::/10 site-local, deprecated (RFC 3879)'],
  ['ff02::1', 'multicast', 'ff00::/8 multicast'],
  ['ff0e::1', 'multicast', 'ff00::/8'],
  ['4000::1', 'not global unicast', 'outside 2000::/3: unassigned'],
  ['1fff:ffff::1', 'not global unicast', 'just below 2000::/3'],
  // Deprecated IPv6 forms that carry an IPv4 address: refused whatever they carry
  ['::127.0.0.1', 'loopback (IPv4-compatible 127.0.0.1)', '::/96 IPv4-compatible, deprecated (RFC 4291 2.5.5.1)'],
  ['::169.254.169.254', 'cloud metadata (IPv4-compatible 169.254.169.254)', '::/96'],
  ['::a00:1', 'private (IPv4-compatible 10.0.0.1)', '::/96, hex form'],
  ['::8.8.8.8', 'deprecated (IPv4-compatible 8.8.8.8)', '::/96 with a public IPv4 address'],
  ['::ffff:0:127.0.0.1', 'loopback (SIIT 127.0.0.1)', '::ffff:0:0:0/96 SIIT (RFC 2765)'],
  ['::ffff:0:808:808', 'deprecated (SIIT 8.8.8.8)', '::ffff:0:0:0/96 with a public IPv4 address'],
  // Public IPv6
  ['2606:4700::1111', undefined, 'public'],
  ['2a00:1450:4001::1', undefined, 'public']
]

t.test('the address rules: one table from the IANA special-purpose registries, through every check that uses them', async (t) => {
  for (const [ip, rule, source] of TABLE) {
    t.equal(refusedAddress(ip), rule, `${ip} (${source}): ${rule ?? 'allowed'}`)
    // The literal in a URL (registration, and each delivery attempt) and a name resolving to it
    // (registration, and the delivery agent's lookup) meet the same rule.
    if (ip.includes('%')) continue
    const literal = isIP(ip) === 6 ? `https://[${ip}]/hook` : `https://${ip}/hook`
    if (rule === undefined) t.doesNotThrow(() => checkUrl(literal, []), literal)
    else t.throws(() => checkUrl(literal, []), { message: new RegExp(`is ${escape(rule)}: refused$`) }, literal)
    const resolves: Resolve = (_name, _options, callback) => callback(null, [{ address: ip, family: isIP(ip) }])
    if (rule === undefined) await t.resolves(checkName('hook.example', resolves), `hook.example -> ${ip}`)
    else await t.rejects(checkName('hook.example', resolves), { message: `The webhook host hook.example resolves to ${ip}, which is ${rule}: refused` })
    const [err] = await new Promise<unknown[]>((resolve) => guardLookup(resolves)('hook.example', {}, (...a) => resolve(a)))
    t.same(err === null ? undefined : (err as Error).message, rule === undefined ? undefined : `hook.example resolves to ${ip}, which is ${rule}: refused`, `delivery lookup: ${ip}`)
  }
})

t.test('URL forms of an address are checked as the address they stand for', async (t) => {
  // WHATWG URL parsing makes these canonical first: decimal, octal, hex and short IPv4 forms, and an
  // IPv6 literal's dotted tail in hex.
  const cases: [string, string][] = [
    ['https://2130706433/', "The webhook URL's address 127.0.0.1 is loopback: refused"],
    ['https://0x7f.1/', "The webhook URL's address 127.0.0.1 is loopback: refused"],
    ['https://017700000001/', "The webhook URL's address 127.0.0.1 is loopback: refused"],
    ['https://127.1/', "The webhook URL's address 127.0.0.1 is loopback: refused"],
    ['https://0/', "The webhook URL's address 0.0.0.0 is unspecified: refused"],
    ['https://0xa9fea9fe/', "The webhook URL's address 169.254.169.254 is cloud metadata: refused"],
    ['https://192.0.2.1./', "The webhook URL's address 192.0.2.1 is documentation: refused"],
    ['https://[::127.0.0.1]/', "The webhook URL's address ::7f00:1 is loopback (IPv4-compatible 127.0.0.1): refused"],
    ['https://[0:0:0:0:0:0:127.0.0.1]/', "The webhook URL's address ::7f00:1 is loopback (IPv4-compatible 127.0.0.1): refused"],
    ['https://[::ffff:0:127.0.0.1]/', "The webhook URL's address ::ffff:0:7f00:1 is loopback (SIIT 127.0.0.1): refused"],
    ['https://[::FFFF:7F00:1]/', "The webhook URL's address ::ffff:7f00:1 is loopback (IPv4-mapped 127.0.0.1): refused"],
    ['https://[2001:0::1]/', "The webhook URL's address 2001::1 is Teredo: refused"]
  ]
  for (const [url, message] of cases) t.throws(() => checkUrl(url, []), { message }, url)
})

t.test('the allow-list: host, or host:port with the scheme\'s default port', async (t) => {
  t.ok(isAllowedHost(new URL('http://127.0.0.1:8080/x'), ['127.0.0.1:8080']))
  t.notOk(isAllowedHost(new URL('http://127.0.0.1:8081/x'), ['127.0.0.1:8080']))
  t.ok(isAllowedHost(new URL('http://Hooks.Local/x'), ['hooks.local']))
  t.ok(isAllowedHost(new URL('https://hooks.local/x'), ['hooks.local:443']))
  t.ok(isAllowedHost(new URL('http://hooks.local/x'), ['hooks.local:80']))
  t.ok(isAllowedHost(new URL('http://[::1]:9/x'), ['[::1]:9']))
})

t.test('registration refuses internal targets without the allow-list, naming the rule', async (t) => {
  const { app } = await build(t, { mcp: createDemoServer(), webhooks: true })
  const cases: [string, string][] = [
    ['https://10.0.0.1/hook', "The webhook URL's address 10.0.0.1 is private: refused"],
    ['https://169.254.169.254/latest/meta-data', "The webhook URL's address 169.254.169.254 is cloud metadata: refused"],
    ['https://[::1]:8443/hook', "The webhook URL's address ::1 is loopback: refused"],
    ['https://[::ffff:127.0.0.1]/hook', "The webhook URL's address ::ffff:7f00:1 is loopback (IPv4-mapped 127.0.0.1): refused"],
    ['https://localhost:8443/hook', 'The webhook host localhost resolves to '],
    ['http://127.0.0.1:8080/hook', 'The webhook URL must use https'],
    ['https://name.invalid/hook', 'The webhook host name.invalid does not resolve']
  ]
  for (const [url, message] of cases) {
    const res = await call(app, { method: 'POST', url: '/webhooks', payload: { url } })
    t.equal(res.status, 400, url)
    t.equal(res.body.code, -32602)
    t.ok(res.body.message.startsWith(message), `${url}: ${res.body.message}`)
  }
  const open = await call(app, { method: 'POST', url: '/webhooks', payload: { url: 'https://93.184.216.34/hook' } })
  t.equal(open.status, 201, 'a public address is fine')
  t.equal((await call(app, { method: 'DELETE', url: `/webhooks/${open.body.id}` })).status, 204)
  const local = await call(app, { method: 'POST', url: '/webhooks', payload: { url: 'https://localhost:8443/hook' } })
  t.match(local.body.message, /resolves to (127\.0\.0\.1|::1), which is loopback: refused$/)
})

t.test('IPv6 forms that carry an internal IPv4 address, and documentation space: refused at registration and at every attempt', async (t) => {
  const { app } = await build(t, { mcp: createDemoServer(), webhooks: true })
  const sender = new Sender([], 2000)
  t.teardown(() => sender.close())
  // Accepted with 201 before, and attempted.
  const cases: [string, string][] = [
    ['https://[::169.254.169.254]/latest/meta-data', "The webhook URL's address ::a9fe:a9fe is cloud metadata (IPv4-compatible 169.254.169.254): refused"],
    ['https://[::127.0.0.1]/hook', "The webhook URL's address ::7f00:1 is loopback (IPv4-compatible 127.0.0.1): refused"],
    ['https://[::10.0.0.1]/hook', "The webhook URL's address ::a00:1 is private (IPv4-compatible 10.0.0.1): refused"],
    ['https://[::ffff:0:127.0.0.1]/hook', "The webhook URL's address ::ffff:0:7f00:1 is loopback (SIIT 127.0.0.1): refused"],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook', "The webhook URL's address 2001:0:4136:e378:8000:63bf:3fff:fdd2 is Teredo: refused"],
    ['https://192.0.2.1/hook', "The webhook URL's address 192.0.2.1 is documentation: refused"]
  ]
  for (const [url, message] of cases) {
    const res = await call(app, { method: 'POST', url: '/webhooks', payload: { url } })
    t.same([res.status, res.body], [400, { code: -32602, message }], url)
    t.match(await sender.send(url, 'whsec_AAAA', 'msg_1', '{}'), { ok: false, gone: false, error: message }, `${url}: the attempt fails before any connection`)
  }
  t.same((await call(app, { url: '/webhooks' })).body, { webhooks: [] }, 'none was registered')
})

t.test('at delivery every attempt is checked again: the attempt fails with the rule', async (t) => {
  const sender = new Sender([], 2000)
  t.teardown(() => sender.close())
  const literal = await sender.send('https://10.0.0.1/hook', 'whsec_AAAA', 'msg_1', '{}')
  t.match(literal, { ok: false, gone: false, error: "The webhook URL's address 10.0.0.1 is private: refused" })
  const rx = await startReceiver()
  t.teardown(() => rx.close())
  // A name resolving to loopback when the connection is made: refused by the agent's lookup.
  const named = await sender.send(`https://localhost:${rx.port}/hook`, 'whsec_AAAA', 'msg_1', '{}')
  t.match(named.error, /^localhost resolves to (127\.0\.0\.1|::1), which is loopback: refused$/)
  t.equal(rx.got.length, 0, 'nothing reached the receiver')
  const plain = await sender.send(rx.url, 'whsec_AAAA', 'msg_1', '{}')
  t.equal(plain.error, 'The webhook URL must use https')
})

t.test('a stored webhook whose target became internal: the message goes back to /notifications', async (t) => {
  const store = new MemoryWebhookStore()
  const { app, mcp } = await build(t, { mcp: createDemoServer(), webhooks: { store, attempts: 1, pollMs: 20 } })
  await store.addWebhook(
    { id: 'wh_x', owner: 'anonymous', url: 'https://localhost:9/hook', createdAt: new Date().toISOString(), secret: 'whsec_AAAA', status: 'active', consecutiveFailures: 0 },
    10
  )
  const owner = (await call(app, { method: 'POST', url: '/webhooks', payload: { url: 'https://10.0.0.1/' } })).status
  t.equal(owner, 400)
  await mcp.store.mailbox.pushNotification('anonymous', { method: 'notifications/message', params: { data: 1 } })
  let log: any[] = []
  for (let i = 0; i < 500 && log.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    log = (await call(app, { url: '/webhooks/wh_x/deliveries' })).body.deliveries
  }
  t.match(log, [{ status: 'returned', error: /^localhost resolves to .* loopback: refused$/ }])
  t.same((await call(app, { url: '/notifications' })).body, [{ method: 'notifications/message', params: { data: 1 } }])
})

t.test('the guarded lookup answers in both forms, and passes DNS errors on', async (t) => {
  const one = await new Promise<unknown[]>((resolve) => guardedLookup('localhost', { family: 4 }, (...a) => resolve(a)))
  t.match(one[0], { message: /loopback: refused/ })
  const missing = await new Promise<unknown[]>((resolve) => guardedLookup('name.invalid', {}, (...a) => resolve(a)))
  t.match(missing[0], { code: 'ENOTFOUND' })
})

t.test('public names pass, in both answer forms (a stand-in resolver: these tests have no public DNS)', async (t) => {
  const publicDns: Resolve = (_name, _options, callback) => callback(null, [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800::1', family: 6 }])
  const rebinding: Resolve = (_name, _options, callback) => callback(null, [{ address: '93.184.216.34', family: 4 }, { address: '10.1.1.1', family: 4 }])
  await checkName('example.com', publicDns)
  await t.rejects(checkName('example.com', rebinding), { message: 'The webhook host example.com resolves to 10.1.1.1, which is private: refused' })
  const lookup = guardLookup(publicDns)
  const single = await new Promise<unknown[]>((resolve) => lookup('example.com', { family: 0 }, (...a) => resolve(a)))
  t.same(single, [null, '93.184.216.34', 4])
  const all = await new Promise<unknown[]>((resolve) => lookup('example.com', { all: true }, (...a) => resolve(a)))
  t.same(all, [null, [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800::1', family: 6 }]])
  const mixed = await new Promise<unknown[]>((resolve) => guardLookup(rebinding)('example.com', {}, (...a) => resolve(a)))
  t.match(mixed[0], { message: 'example.com resolves to 10.1.1.1, which is private: refused' })
})

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
