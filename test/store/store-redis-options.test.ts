import t from 'tap'
import { createHash, randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { loadConfig } from '../../src/config.js'
import { wireErrorOf } from '../../src/errors.js'
import { RedisStore } from '../../src/store/redis.js'
import { redisFromConfig } from '../../src/store/redis-config.js'
import { connect } from '../../src/store/redis-connect.js'
import { startRedis } from '../helpers/redis-server.js'
import { until } from '../helpers/redis-cluster.js'
import { startRedisProxy } from '../../bench/lib/redis-proxy.js'

// The Redis settings and options of the store, against a real redis-server where they connect.
const redis = await startRedis()
t.teardown(() => redis.stop())
const sha1 = (s: string) => createHash('sha1').update(s).digest('hex')

t.test('MCP_REDIS_*: one of three forms, with their options', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-ca-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const ca = join(dir, 'ca.pem')
  writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n')
  const cluster = loadConfig({ MCP_REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7000', MCP_REDIS_PASSWORD: 'pw', MCP_REDIS_USERNAME: 'mcp', MCP_REDIS_TLS: 'true' })
  t.same(redisFromConfig(cluster), { clusterNodes: ['10.0.0.1:7000', '10.0.0.2:7000'], username: 'mcp', password: 'pw', tls: true, prefix: 'mcp:' })
  const sentinel = loadConfig({
    MCP_REDIS_SENTINELS: 's1:26379,s2:26379',
    MCP_REDIS_SENTINEL_MASTER: 'main',
    MCP_REDIS_SENTINEL_PASSWORD: 'spw',
    MCP_REDIS_TLS_CA_FILE: ca,
    MCP_REDIS_WAIT_REPLICAS: '1',
    MCP_REDIS_WAIT_TIMEOUT_MS: '500',
    MCP_REDIS_PREFIX: 'blue:'
  })
  t.same(redisFromConfig(sentinel), {
    sentinels: ['s1:26379', 's2:26379'],
    sentinelMaster: 'main',
    sentinelPassword: 'spw',
    tls: { ca: readFileSync(ca) },
    prefix: 'blue:',
    waitReplicas: 1,
    waitTimeoutMs: 500
  })
  t.equal(redisFromConfig(loadConfig({})), undefined)
  t.match(redisFromConfig(loadConfig({ MCP_REDIS_URL: redis.url, MCP_REDIS_COMMAND_TIMEOUT_MS: '250' })), { commandTimeoutMs: 250 })
  t.match(redisFromConfig(loadConfig({ MCP_REDIS_URL: redis.url, MCP_REDIS_FUNCTIONS: 'off' })), { functions: 'off' })
  t.notOk('functions' in redisFromConfig(loadConfig({ MCP_REDIS_URL: redis.url }))!, 'unset: the store\'s default, auto')
  t.throws(() => loadConfig({ MCP_REDIS_URL: redis.url, MCP_REDIS_FUNCTIONS: 'on' }), /MCP_REDIS_FUNCTIONS/)
  t.throws(() => loadConfig({ MCP_REDIS_URL: redis.url, MCP_REDIS_CLUSTER_NODES: 'a:1' }), /Set only one of MCP_REDIS_URL, MCP_REDIS_CLUSTER_NODES/)
  t.throws(() => loadConfig({ MCP_REDIS_SENTINELS: 'a:1' }), /MCP_REDIS_SENTINELS and MCP_REDIS_SENTINEL_MASTER go together/)
  t.throws(() => loadConfig({ MCP_REDIS_PASSWORD: 'x', MCP_REDIS_TLS: 'true' }), /MCP_REDIS_PASSWORD, MCP_REDIS_TLS are set without/)
  t.throws(() => loadConfig({ MCP_REDIS_URL: redis.url, MCP_REDIS_TLS_CA_FILE: join(dir, 'none') }), /MCP_REDIS_TLS_CA_FILE cannot be read/)
  t.throws(() => loadConfig({ MCP_REDIS_CLUSTER_NODES: 'nohost' }), /MCP_REDIS_CLUSTER_NODES="nohost"/)
  t.throws(() => loadConfig({ MCP_REDIS_URL: redis.url, MCP_REDIS_PREFIX: 'a{b}:' }), /MCP_REDIS_PREFIX/)
  t.throws(() => new RedisStore({ url: redis.url, prefix: '{x}' }), /must not contain \{ or \}/)
  t.throws(() => new RedisStore({ url: redis.url, clusterNodes: ['a:1'] }), /exactly one of url, clusterNodes or sentinels/)
  t.throws(() => new RedisStore({ sentinels: ['a:1'] }), /sentinels need sentinelMaster/)
  t.throws(() => new RedisStore({ clusterNodes: ['a:99999'] }), /Not a host:port: "a:99999"/)
  // TLS options reach ioredis (these connect nowhere: closed at once).
  for (const tls of [true, { rejectUnauthorized: true }]) {
    const s = new RedisStore({ sentinels: ['[::1]:1'], sentinelMaster: 'm', tls, password: 'p', sentinelPassword: 's', redis: { sentinelRetryStrategy: () => null } })
    t.ok((s.client as Redis).options.tls)
    await s.close()
  }
  // Commands time out (2 s by default); the subscriber waits for its connection however long it takes.
  const opened = connect({ url: redis.url })
  t.same([(opened.client as Redis).options.commandTimeout, (opened.sub as Redis).options.commandTimeout], [2000, undefined])
  opened.client.disconnect()
  opened.sub.disconnect()
  const waiting = new RedisStore({ url: redis.url, commandTimeoutMs: 100, waitReplicas: 1, waitTimeoutMs: 3000 })
  t.equal((waiting.client as Redis).options.commandTimeout, 4000, 'long enough for WAIT to take its whole timeout')
  await waiting.close()
  const plain = new RedisStore({ url: redis.url, tls: false, username: 'default' })
  await plain.ping()
  await plain.close()
})

t.test('MCP_REDIS_WAIT_REPLICAS on a Redis without replicas: the write is refused with 503', async (t) => {
  const prefix = `d${randomUUID().slice(0, 8)}:`
  const store = new RedisStore({ url: redis.url, prefix, waitReplicas: 1, waitTimeoutMs: 50 })
  t.teardown(() => store.close())
  const err = await store.connections.setLogLevel('alice', 'info').then(() => undefined, (e: unknown) => e)
  t.match(err, { code: 'ERR_STORE_NOT_REPLICATED', message: 'The store did not confirm the write on 1 replica(s) within 50 ms' })
  t.match(wireErrorOf(err), { status: 503, message: 'The store did not confirm the write on 1 replica(s) within 50 ms', headers: { 'retry-after': '1' } })
  t.equal(await store.connections.getLogLevel('alice'), 'info', 'written on the primary all the same')
  // A write with WAIT whose step the node lost: loaded again (functions) or sent whole (scripts), once.
  const admin = new Redis(redis.url)
  t.teardown(() => admin.quit())
  const scripted = new RedisStore({ url: redis.url, prefix, waitReplicas: 1, waitTimeoutMs: 50, functions: 'off' })
  t.teardown(() => scripted.close())
  for (const [s, flush, level] of [[store, 'FUNCTION', 'error'], [scripted, 'SCRIPT', 'debug']] as const) {
    await admin.call(flush, 'FLUSH')
    await t.rejects(s.connections.setLogLevel('erin', level), { code: 'ERR_STORE_NOT_REPLICATED' }, `${flush} FLUSH: sent again, then WAIT`)
    t.equal(await s.connections.getLogLevel('erin'), level, 'written once found')
  }
  const raw = new Redis(redis.url)
  t.teardown(() => raw.quit())
  await raw.set(`${prefix}c:{${sha1('bob')}}`, 'not a hash')
  const refused = await store.connections.setLogLevel('bob', 'info').then(() => undefined, (e: unknown) => e)
  t.match(refused, { code: 'ERR_STORE_FAILED', message: 'The store refused a command', cause: { message: /WRONGTYPE/ } }, 'a script error comes through, its words in the cause (for the log)')
  t.equal(wireErrorOf(refused), undefined, 'an opaque 500')
  const defaults = new RedisStore({ url: redis.url, prefix, waitReplicas: 0 })
  t.teardown(() => defaults.close())
  await defaults.connections.setLogLevel('carol', 'info')
  t.same(redisFromConfig({ MCP_REDIS_URL: redis.url, MCP_REDIS_WAIT_REPLICAS: 2 }), { url: redis.url, prefix: 'mcp:', waitReplicas: 2, waitTimeoutMs: 1000 })
  t.throws(() => loadConfig({ MCP_REDIS_PREFIX: 'a:' }), /MCP_REDIS_PREFIX is set without/)
  // A primary demoted to a replica answers READONLY: that (alone) reconnects and retries.
  const reconnect = (store.client as Redis).options.reconnectOnError!
  t.same([reconnect(new Error('READONLY You can\'t write against a read only replica.')), reconnect(new Error('ERR other'))], [2, false])
})

// The store writes its prefix, connection TTL, connection bound and publish command into its own
// copy of each script (src/store/redis-lua.ts, configure) instead of sending them with every call.
t.test('the configuration written into the scripts: any prefix, exactly as given, one script set per store', async (t) => {
  const id = randomUUID()
  const odd = `q'"\\\n é-${id}:`
  const store = new RedisStore({ url: redis.url, prefix: odd, limits: { maxConnections: 3 } })
  const plain = new RedisStore({ url: redis.url, prefix: `plain-${randomUUID()}:` })
  const raw = new Redis(redis.url)
  t.teardown(async () => {
    await store.close()
    await plain.close()
    raw.disconnect()
  })
  await store.connections.setLogLevel('alice', 'debug')
  await store.mailbox.pushNotification('alice', { method: 'n/1' })
  const task = { taskId: 't1', status: 'working', createdAt: new Date().toISOString(), lastUpdatedAt: new Date().toISOString(), ttlMs: 60_000, pollIntervalMs: 1000 } as const
  await store.tasks.createTask('alice', task)
  t.same(await store.tasks.getTask('alice', 't1'), task)
  t.equal(await store.connections.getLogLevel('alice'), 'debug')
  const keys = await raw.keys('*')
  const mine = keys.filter((k) => k.startsWith(odd))
  t.ok(mine.length >= 3, `keys under the odd prefix: ${mine.length}`)
  t.same(
    keys.filter((k) => k.includes(id) && !k.startsWith(odd)),
    [],
    'no key under a mangled prefix'
  )
  // The connection bound is the store's own: a fourth connection evicts the least recently used.
  for (const owner of ['b', 'c', 'd']) await store.connections.setLogLevel(owner, 'info')
  t.equal(await store.connections.getLogLevel('alice'), undefined, 'alice, least recently used, made way (maxConnections 3)')
  // The other store, with its defaults, runs its own scripts: alice there is untouched by that bound.
  await plain.connections.setLogLevel('alice', 'error')
  for (const owner of ['b', 'c', 'd']) await plain.connections.setLogLevel(owner, 'info')
  t.equal(await plain.connections.getLogLevel('alice'), 'error')
})

// ioredis re-subscribes a reconnected subscriber itself (autoResubscribe) and leaves that promise
// unhandled: a connection lost again before the answer, then a close, made an unhandled rejection
// ("Connection is closed."), fatal by default in Node. The store re-subscribes itself, and handles it.
t.test('a subscriber that loses its connection while it re-subscribes, then closes: no unhandled rejection', async (t) => {
  const proxy = await startRedisProxy(redis.url, 300)
  t.teardown(() => proxy.close())
  const admin = new Redis(redis.url)
  t.teardown(() => admin.quit())
  const unhandled: unknown[] = []
  const onUnhandled = (err: unknown) => void unhandled.push(err)
  process.on('unhandledRejection', onUnhandled)
  t.teardown(() => void process.off('unhandledRejection', onUnhandled))
  const store = new RedisStore({ url: proxy.url, prefix: `r${randomUUID().slice(0, 8)}:` })
  await store.ping()
  const subscribes = () => proxy.counts().byName.SUBSCRIBE ?? 0
  const before = subscribes()
  await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
  await until(() => subscribes() > before, 'the subscriber to subscribe again')
  // Its SUBSCRIBE is 300 ms from Redis: the connection goes now, and the store closes.
  await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
  await store.close()
  await new Promise((resolve) => setTimeout(resolve, 1000))
  t.same(unhandled.map(String), [], 'no rejection left unhandled')
})

t.test('close() ends even when Redis stops answering: QUIT is waited for a moment, then dropped', async (t) => {
  const paused = await startRedis()
  t.teardown(async () => {
    paused.process.kill('SIGCONT')
    await paused.stop()
  })
  const store = new RedisStore({ url: paused.url })
  await store.connections.setLogLevel('alice', 'debug') // connected and ready
  paused.process.kill('SIGSTOP') // the socket stays open; nothing answers QUIT
  let guard: NodeJS.Timeout | undefined
  const outcome = await Promise.race([
    store.close().then(() => 'closed'),
    new Promise((resolve) => (guard = setTimeout(resolve, 60_000, 'still waiting after 60 s')))
  ])
  clearTimeout(guard)
  t.equal(outcome, 'closed')
})
