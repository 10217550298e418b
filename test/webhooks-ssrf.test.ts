import t from 'tap'
import { createDemoServer } from '../src/demo/catalogue.js'
import { Sender } from '../src/webhooks/deliver.js'
import { MemoryWebhookStore } from '../src/webhooks/memory.js'
import { checkName, guardLookup, guardedLookup, isAllowedHost, refusedAddress, type Resolve } from '../src/webhooks/ssrf.js'
import { build, call } from './helper.js'
import { startReceiver } from './webhook-receiver.js'

t.test('the address rules, IPv4 and IPv6, mapped and embedded forms', async (t) => {
  const cases: [string, string | undefined][] = [
    ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['192.168.1.1', 'private'], ['fd12::1', 'private'], ['64:ff9b:1::1', 'private'],
    ['169.254.169.254', 'cloud metadata'], ['fd00:ec2::254', 'cloud metadata'], ['100.100.100.200', 'cloud metadata'],
    ['127.0.0.1', 'loopback'], ['127.8.8.8', 'loopback'], ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata'], ['64:ff9b::10.0.0.1', 'private'], ['2002:7f00:1::1', 'loopback'],
    ['169.254.1.1', 'link-local'], ['fe80::1', 'link-local'], ['100.64.0.1', 'CGNAT'], ['224.0.0.251', 'multicast'], ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'], ['::', 'unspecified'], ['240.0.0.1', 'reserved'], ['2001:db8::1', 'reserved'],
    ['93.184.216.34', undefined], ['2606:4700::1111', undefined], ['64:ff9b::808:808', undefined], ['2002:808:808::1', undefined], ['2002:7f00:1:0:0:0:0:1', 'loopback']
  ]
  for (const [ip, rule] of cases) t.equal(refusedAddress(ip), rule, `${ip}: ${rule ?? 'public'}`)
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
    ['https://[::ffff:127.0.0.1]/hook', "The webhook URL's address ::ffff:7f00:1 is loopback: refused"],
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
  await mcp.store.pushNotification('anonymous', { method: 'notifications/message', params: { data: 1 } })
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
