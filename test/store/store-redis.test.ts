import t from 'tap'
import { createHash, randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { RedisStore, type RedisStoreOptions } from '../../src/store/redis.js'
import { TASK_FLOOR } from '../../src/store/redis-tasks.js'
import { createStore, MemoryStore } from '../../src/store/index.js'
import { storeContract } from '../helpers/store-contract.js'
import { redisStoreFactory } from '../helpers/redis-store-factory.js'
import { startRedis } from '../helpers/redis-server.js'
import { createServer, type AddressInfo } from 'node:net'
import { once } from 'node:events'
import { startRedisProxy } from '../../bench/lib/redis-proxy.js'
import { createDemoServer } from '../../src/demo/catalogue.js'
import { encodeJsonHeader } from '../../src/headers.js'
import { build, call } from '../helpers/helper.js'
import type { FastifyRequest } from 'fastify'
import type { Principal } from '../../src/core/request-context.js'

// A real redis-server, started here and stopped at the end; without one this fails (never skips).
const redis = await startRedis()
t.teardown(() => redis.stop())

const open = (options: Partial<RedisStoreOptions> = {}) => new RedisStore({ url: redis.url, ...options })

t.test('the contract, by Redis Functions (the default on Redis 7)', async (t) => {
  storeContract(t, redisStoreFactory(open))
})

t.test('the contract, by scripts (functions off, as on Redis 6.2)', async (t) => {
  storeContract(t, redisStoreFactory((options) => open({ ...options, functions: 'off' })))
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const sha1 = (s: string) => createHash('sha1').update(s).digest('hex')

t.test('createStore: Redis when MCP_REDIS_URL is set, memory otherwise', async (t) => {
  const memory = createStore({})
  t.ok(memory instanceof MemoryStore)
  const bounded = createStore({ MCP_STORE_MAX_TASKS_PER_PRINCIPAL: 7, MCP_STORE_MAX_REPLAY_BYTES: 4096 }, { maxTasks: 9 }) as MemoryStore
  t.same([bounded.limits.maxTasksPerPrincipal, bounded.limits.maxIdempotencyBytes, bounded.limits.maxTasks, bounded.limits.maxNotificationBytes], [7, 4096, 9, 1024 * 1024], 'MCP_STORE_* set the limits; options win; the rest keep their defaults')
  await bounded.close()
  await memory.close()
  const shared = createStore({ MCP_REDIS_URL: redis.url }) as RedisStore
  t.ok(shared instanceof RedisStore)
  t.equal(shared.prefix, 'mcp:')
  await shared.ping()
  await shared.close()
  await shared.close()
  const named = createStore({ MCP_REDIS_URL: redis.url, MCP_REDIS_PREFIX: 'blue:' }, { maxTasks: 3 }) as RedisStore
  t.same([named.prefix, named.limits.maxTasks], ['blue:', 3])
  await named.close()
})

t.test('every key is under the prefix, and everything but the small indexes expires', async (t) => {
  const prefix = `k${randomUUID().slice(0, 8)}:`
  const store = open({ prefix })
  t.teardown(() => store.close())
  const raw = new Redis(redis.url)
  t.teardown(() => raw.quit())
  await store.connections.setLogLevel('alice', 'info')
  await store.connections.subscribe('alice', 'x:1')
  await store.mailbox.pushNotification('alice', { method: 'n' })
  await store.mailbox.pushNotification('alice', { method: 'm' })
  await store.mailbox.takeNotifications('alice')
  await store.mailbox.enqueueRequest('alice', 'r1', { method: 'roots/list' })
  await store.mailbox.enqueueRequest('alice', 'r2', { method: 'roots/list' })
  await store.mailbox.completeRequest('alice', 'r2', { result: {} })
  const now = new Date().toISOString()
  await store.tasks.createTask('alice', { taskId: 't', status: 'input_required', createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, inputRequests: { a: { method: 'roots/list' }, b: { method: 'roots/list' } } })
  await store.tasks.answerTask('alice', 't', { a: {} })
  await store.connections.createSession()
  await store.idempotency.beginIdempotent('alice', 'i', 'd', 60_000)
  const keys = (await raw.keys('*')).filter((k) => !k.startsWith('t') || k.startsWith(prefix))
  const mine = keys.filter((k) => k.startsWith(prefix))
  t.same(keys.filter((k) => !k.startsWith(prefix) && k.startsWith('k')), [], 'nothing outside the prefix')
  // The registry's indexes and ledgers (bytes, per owner, running tasks): small, emptied as their members expire.
  const index = new RegExp(`^${prefix}\\{g\\}:(conns|sess|clock|(tasks|idem)(:(b|u|r|o:[0-9a-f]{40}|r:[0-9a-f]{40}))?)$`)
  for (const key of mine) {
    const ttl = await raw.pttl(key)
    if (index.test(key)) continue
    t.ok(ttl > 0, `${key.slice(prefix.length)} expires (${ttl} ms)`)
  }
  t.ok(await raw.pttl(`${prefix}u:{${sha1('x:1')}}`) > 0, 'the per-URI subscriber set too')
  t.ok(mine.length >= 12, `${mine.length} keys`)
})

t.test('the task ledger drops expired records in one batch, and a bound that would refuse sweeps at once', async (t) => {
  const prefix = `l${randomUUID().slice(0, 8)}:`
  const store = open({ prefix, limits: { maxTasksPerPrincipal: 2 } })
  t.teardown(() => store.close())
  const raw = new Redis(redis.url)
  t.teardown(() => raw.quit())
  const now = new Date().toISOString()
  const task = (taskId: string, ttlMs: number) => ({ taskId, status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs, pollIntervalMs: 1000 })
  const L = `${prefix}{g}:tasks`
  // Twenty owners with one short task each, all finished: twenty records in every part of the ledger.
  for (let i = 0; i < 20; i++) {
    await store.tasks.createTask(`owner-${i}`, task(`s${i}`, 150))
    await store.tasks.updateTask(`owner-${i}`, `s${i}`, { status: 'completed', result: { content: [] } })
  }
  t.equal(await raw.zcard(L), 20)
  await sleep(250)
  await store.tasks.createTask('alice', task('a1', 60_000))
  t.same(await raw.zrange(L, '0', '-1'), [`${sha1('alice')}:a1`], 'the next write swept every expired record')
  t.same(await raw.hkeys(`${L}:b`), [`${sha1('alice')}:a1`])
  const totals = await raw.hgetall(`${L}:u`)
  t.same(Object.keys(totals).filter((k) => k !== '~').sort(), ['*', '*r', sha1('alice'), `${sha1('alice')}r`].sort(), 'owners with nothing left leave the totals')
  t.equal(totals['*'], totals[sha1('alice')], 'the bytes in all are those of alice')
  t.same([totals['*r'], totals[`${sha1('alice')}r`]], ['1', '1'], 'one task running, in all and for alice: the expired ones left the counts')
  t.equal(await raw.exists(`${L}:o:${sha1('owner-3')}`, `${L}:r`), 1, "an owner's set is gone; the running set holds alice's task")
  const a1 = `${sha1('alice')}:a1`
  t.equal(Number(await raw.hget(`${L}:b`, a1)), TASK_FLOOR, 'a small task counts the floor')
  await store.tasks.updateTask('alice', 'a1', { status: 'completed', result: { content: [] } })
  const outcome = Number(await raw.hget(`${L}:b`, a1))
  t.ok(outcome > 256 && outcome < TASK_FLOOR, `a small outcome (written with its count, in one round trip) counts its own ${outcome} bytes`)
  t.equal((await store.tasks.getTask('alice', 'a1'))?.status, 'completed')
  t.equal(await raw.zcard(`${L}:r`), 0, 'and leaves the running ones')
  t.same(await raw.hmget(`${L}:u`, '*r', `${sha1('alice')}r`), ['0', '0'], 'and their counts')

  // Bob's two tasks expire before the next sweep is due; his third is not refused for them.
  await store.tasks.createTask('bob', task('b1', 40))
  await store.tasks.createTask('bob', task('b2', 40))
  await t.rejects(store.tasks.createTask('bob', task('b3', 40)), { name: 'QuotaExceeded' }, 'two running: the per-principal quota')
  await sleep(60)
  await store.tasks.createTask('bob', task('b4', 60_000))
  t.same(await raw.zrange(`${L}:r:${sha1('bob')}`, '0', '-1'), [`${sha1('bob')}:b4`], 'the refusal swept first, then counted the living')
  t.same(await raw.hmget(`${L}:u`, '*r', `${sha1('bob')}r`), ['1', '1'], 'and so do the counts')
  // One of two running tasks expires: its owner keeps the other, and both counts lose the one.
  await store.tasks.createTask('bob', task('b5', 40))
  await sleep(150)
  await store.tasks.createTask('erin', task('e1', 60_000))
  t.same(await raw.hmget(`${L}:u`, '*r', `${sha1('bob')}r`), ['2', '1'], 'a sweep lowers the running counts by what expired')
})

t.test('a task ledger written before the running counts were kept counts its running sets once', async (t) => {
  const prefix = `v${randomUUID().slice(0, 8)}:`
  const store = open({ prefix, limits: { maxTasksPerPrincipal: 2 } })
  t.teardown(() => store.close())
  const raw = new Redis(redis.url)
  t.teardown(() => raw.quit())
  const now = new Date().toISOString()
  const task = (taskId: string) => ({ taskId, status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000 })
  const L = `${prefix}{g}:tasks`
  const carol = sha1('carol')
  await store.tasks.createTask('carol', task('c1'))
  await store.tasks.createTask('dave', task('d1'))
  // As an earlier version left it: the sets, and totals of bytes only.
  await raw.hdel(`${L}:u`, '*r', `${carol}r`, `${sha1('dave')}r`)
  await store.tasks.createTask('carol', task('c2'))
  t.same(await raw.hmget(`${L}:u`, '*r', `${carol}r`), ['3', '2'], 'counted from the sets, then kept')
  await t.rejects(store.tasks.createTask('carol', task('c3')), { name: 'QuotaExceeded' }, "carol's two running tasks reach her quota")
  await raw.hdel(`${L}:u`, `${carol}r`)
  await store.tasks.updateTask('carol', 'c1', { status: 'completed', result: { content: [] } })
  t.same(await raw.hmget(`${L}:u`, '*r', `${carol}r`), ['2', null], 'a finish lowers the counts there are and leaves an absent one absent')
  await store.tasks.createTask('carol', task('c4'))
  t.same(await raw.hmget(`${L}:u`, '*r', `${carol}r`), ['3', '2'], 'the next booking counts her set: c2 and c4')
  await t.rejects(store.tasks.createTask('carol', task('c5')), { name: 'QuotaExceeded' })
})

t.test('finishing a task: a small outcome is one write to Redis, a large one waits for the ledger first', async (t) => {
  const proxy = await startRedisProxy(redis.url)
  t.teardown(() => proxy.close())
  const store = open({ url: proxy.url, prefix: `f${randomUUID().slice(0, 8)}:` })
  t.teardown(() => store.close())
  const now = new Date().toISOString()
  const task = (taskId: string) => ({ taskId, status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000 })
  for (const id of ['warm', 'small', 'large']) await store.tasks.createTask('alice', task(id))
  // Every script has run once (EVAL after the node's first NOSCRIPT): what follows is counted.
  await store.tasks.updateTask('alice', 'warm', { status: 'completed', result: { content: [] } })
  let before = proxy.counts()
  await store.tasks.updateTask('alice', 'small', { status: 'completed', result: { content: [] } })
  t.same([proxy.counts().writes - before.writes, proxy.counts().commands - before.commands], [1, 2], 'the count and the outcome leave together')
  before = proxy.counts()
  await store.tasks.updateTask('alice', 'large', { status: 'completed', result: { content: [{ type: 'text', text: 'x'.repeat(2000) }] } })
  t.same([proxy.counts().writes - before.writes, proxy.counts().commands - before.commands], [2, 2], 'the ledger decides first, then the outcome is written')
  t.equal((await store.tasks.getTask('alice', 'large'))?.status, 'completed', 'it fits: kept')
})

t.test('scripts run by EVALSHA; one the node no longer has (a restart, a failover, SCRIPT FLUSH) is sent again by EVAL', async (t) => {
  const proxy = await startRedisProxy(redis.url)
  t.teardown(() => proxy.close())
  // No background sweep of its own during the test (it runs scripts too).
  const store = open({ url: proxy.url, prefix: `s${randomUUID().slice(0, 8)}:`, sweepMs: 600_000, functions: 'off' })
  t.equal(await store.functionLibrary(), undefined, 'functions off: scripts')
  t.teardown(() => store.close())
  const admin = new Redis(redis.url)
  t.teardown(() => admin.quit())
  // Scripts only, by verb (the subscriber's SUBSCRIBEs share the proxy and come when they come).
  const scriptsSent = () => {
    const c = proxy.counts().byName
    const sum = (verb: string) => Object.entries(c).filter(([name]) => name.startsWith(verb)).reduce((n, [, k]) => n + k, 0)
    return { evalsha: sum('EVALSHA '), eval: sum('EVAL ') }
  }
  const during = async (push: () => Promise<void>) => {
    const before = scriptsSent()
    await push()
    const after = scriptsSent()
    return [after.evalsha - before.evalsha, after.eval - before.eval]
  }
  await store.mailbox.pushNotification('alice', { method: 'one' })
  const [n, first] = await during(() => store.mailbox.pushNotification('alice', { method: 'two' }))
  t.ok(n! > 0, 'a push runs its scripts by EVALSHA')
  t.equal(first, 0, 'once loaded, no EVAL')
  await admin.script('FLUSH')
  t.same(await during(() => store.mailbox.pushNotification('alice', { method: 'three' })), [n, n], 'NOSCRIPT for each, then EVAL of each: the push is not lost')
  t.same(await during(() => store.mailbox.pushNotification('alice', { method: 'four' })), [n, 0], 'and EVALSHA alone again after that')
  t.same((await store.mailbox.takeNotifications('alice'))?.notifications, [{ method: 'one' }, { method: 'two' }, { method: 'three' }, { method: 'four' }], 'each pushed once')
  const [pipelineScripts] = [Object.keys((store.client as unknown as { scriptsSet: object }).scriptsSet)]
  t.same(pipelineScripts, [], 'no script is defined on the client (ioredis would copy each onto every pipeline)')
})

t.test('Redis Functions: one library per code, loaded once; FUNCTION FLUSH heals; a second store finds it loaded', async (t) => {
  const proxy = await startRedisProxy(redis.url)
  t.teardown(() => proxy.close())
  const admin = new Redis(redis.url)
  t.teardown(() => admin.quit())
  const prefix = `fn${randomUUID().slice(0, 8)}:`
  const sent = (verb: string) => Object.entries(proxy.counts().byName).filter(([name]) => name.startsWith(verb)).reduce((n, [, k]) => n + k, 0)
  const store = open({ url: proxy.url, prefix, sweepMs: 600_000 })
  t.teardown(() => store.close())
  const name = (await store.functionLibrary())!
  t.match(name, /^mcp_pure_http_[0-9a-f]{12}$/, 'chosen at connect: functions')
  const listed = (await admin.call('FUNCTION', 'LIST', 'LIBRARYNAME', name)) as unknown[][]
  t.equal(listed.length, 1, 'FUNCTION LIST shows it')
  const functions = listed[0]![5] as unknown[][]
  t.equal(functions.length, Object.keys(store.scriptShas()).length, 'every step a function')
  const flags = Object.fromEntries(functions.map((f) => [String(f[1]), f[5]]))
  t.same([flags[`${name}_mcpGetTask`], flags[`${name}_mcpLive`], flags[`${name}_mcpTake`]], [['no-writes'], ['no-writes'], []], 'no-writes only where the step writes nothing')
  t.same(['mcpAck', 'mcpForget', 'mcpDel', 'mcpWithdraw'].map((step) => flags[`${name}_${step}`]), [['allow-oom'], ['allow-oom'], ['allow-oom'], ['allow-oom']], 'allow-oom where the step makes room')
  t.equal(sent('FUNCTION LOAD'), 1, 'loaded once')
  const evalsBefore = sent('EVAL')
  await store.mailbox.pushNotification('alice', { method: 'one' })
  const fcalls = sent('FCALL')
  t.ok(fcalls > 0, `a push is ${fcalls} FCALL`)
  t.equal(sent('EVAL'), evalsBefore, 'and no script')

  // A second store of the same code (another instance) finds the library and loads nothing.
  const peer = open({ url: proxy.url, prefix, sweepMs: 600_000 })
  t.teardown(() => peer.close())
  t.equal(await peer.functionLibrary(), name)
  t.equal(sent('FUNCTION LOAD'), 1, 'FUNCTION LIST found it: no second load')
  // Another configuration (here a prefix; a version of the server likewise) is another library, beside it.
  const other = open({ url: proxy.url, prefix: `o${prefix}` })
  t.teardown(() => other.close())
  t.not(await other.functionLibrary(), name)
  t.equal(((await admin.call('FUNCTION', 'LIST', 'LIBRARYNAME', name)) as unknown[]).length, 1, 'loading it left the first in place')

  // FUNCTION FLUSH (or a new empty master): "Function not found", the library again, the call again.
  await admin.call('FUNCTION', 'FLUSH')
  const loads = sent('FUNCTION LOAD')
  await Promise.all([store.mailbox.pushNotification('alice', { method: 'two' }), store.mailbox.pushNotification('alice', { method: 'three' })])
  t.equal(sent('FUNCTION LOAD') - loads, 1, 'loaded once for both calls that missed it')
  t.same((await peer.mailbox.takeNotifications('alice'))?.notifications, [{ method: 'one' }, { method: 'two' }, { method: 'three' }], 'nothing lost, nothing twice')
})

t.test('functions refused (an ACL without FUNCTION): the store runs scripts, chosen once', async (t) => {
  const admin = new Redis(redis.url)
  t.teardown(() => admin.quit())
  const user = `nofn${randomUUID().slice(0, 8)}`
  await admin.call('ACL', 'SETUSER', user, 'on', '>secret-pw', '~*', '&*', '+@all', '-function')
  t.teardown(() => admin.call('ACL', 'DELUSER', user))
  const url = redis.url.replace('redis://', `redis://${user}:secret-pw@`)
  const store = open({ url, prefix: `acl${randomUUID().slice(0, 8)}:` })
  t.teardown(() => store.close())
  await store.ping()
  t.equal(await store.functionLibrary(), undefined, 'FUNCTION LIST answered NOPERM: scripts')
  const stats = async () => (await admin.info('commandstats')).match(/cmdstat_(fcall|evalsha|function\|list):calls=\d+/g)?.join(' ')
  const before = await stats()
  await store.mailbox.pushNotification('alice', { method: 'n' })
  t.same((await store.mailbox.takeNotifications('alice'))?.notifications, [{ method: 'n' }])
  const after = await stats()
  t.match(after, /cmdstat_evalsha/, 'by EVALSHA')
  t.equal(/cmdstat_fcall:calls=\d+/.exec(after!)?.[0], /cmdstat_fcall:calls=\d+/.exec(before!)?.[0], 'no FCALL')
  t.equal(/function\|list:calls=\d+/.exec(after!)?.[0], /function\|list:calls=\d+/.exec(before!)?.[0], 'and not asked again')
})

t.test('Redis not answering at connect decides nothing: the next step asks again, and gets functions', async (t) => {
  // A port that takes connections and drops them at once: held, so that nobody else takes it meanwhile.
  const holder = createServer((socket) => socket.destroy()).listen(0, '127.0.0.1')
  await once(holder, 'listening')
  const { port } = holder.address() as AddressInfo
  const store = open({ url: `redis://127.0.0.1:${port}`, prefix: `late${randomUUID().slice(0, 8)}:`, commandTimeoutMs: 200 })
  t.teardown(() => store.close())
  await t.rejects(store.mailbox.pushNotification('alice', { method: 'n' }), { name: 'StoreUnavailable' }, 'nobody there: 503')
  holder.close()
  await once(holder, 'close')
  const late = await startRedis({ port })
  t.teardown(() => late.stop())
  // The client reconnects by itself (its backoff): wait for it, then the step chooses.
  while ((await store.ping().then(() => true, () => false)) === false) await sleep(50)
  t.match(await store.functionLibrary(), /^mcp_pure_http_/, 'functions once Redis answered')
  await store.mailbox.pushNotification('alice', { method: 'n' })
  t.same((await store.mailbox.takeNotifications('alice'))?.notifications, [{ method: 'n' }])
})

t.test("getTaskText: a task's wire form built from its stored JSON is the text of tasks/get's object", async (t) => {
  const store = open({ prefix: `x${randomUUID().slice(0, 8)}:` })
  t.teardown(() => store.close())
  const now = new Date().toISOString()
  const base = { createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 2500 }
  await store.tasks.createTask('alice', { taskId: 'plain', status: 'working', notify: true, statusMessage: 'ünïcode "quoted"', ...base })
  await store.tasks.createTask('alice', { taskId: 'asking', status: 'input_required', inputRequests: { 'a.1': { method: 'roots/list' }, b: { method: 'elicitation/create', params: { message: 'x' } } }, ...base })
  await store.tasks.createTask('alice', { taskId: 'done', status: 'working', ...base })
  await store.tasks.updateTask('alice', 'done', { status: 'completed', result: { content: [{ type: 'text', text: 'ok' }], structuredContent: { n: 1e-7 } } })
  await store.tasks.createTask('alice', { taskId: 'failed', status: 'working', ...base })
  await store.tasks.updateTask('alice', 'failed', { status: 'failed', error: { code: -32603, message: 'no' } })
  for (const id of ['plain', 'asking', 'done', 'failed']) {
    const record = (await store.tasks.getTask('alice', id))!
    const text = (await store.tasks.getTaskText('alice', id))!
    const { notify: _notify, ...wire } = record
    t.equal(text.json, JSON.stringify({ resultType: 'complete', ...wire }), `${id}: the same text`)
    t.same([text.status, text.pollIntervalMs], [record.status, 2500])
  }
  t.equal(await store.tasks.getTaskText('bob', 'plain'), undefined, "another owner's task is unknown")
})

t.test('tasks/get with the Redis store: the task as stored, and 404 for an unknown task or another principal\'s', async (t) => {
  const store = open({ prefix: `g${randomUUID().slice(0, 8)}:` })
  t.teardown(() => store.close())
  const { app } = await build(t, { mcp: createDemoServer({ taskStepMs: 5 }), store, authenticate: async (request: FastifyRequest): Promise<Principal> => ({ id: String(request.headers['x-user'] ?? 'alice'), scopes: [], anonymous: false }) })
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } }
  const headers = { 'mcp-meta': encodeJsonHeader(meta) }
  const started = await call(app, { method: 'POST', url: '/tools/slow_compute/calls', payload: { _meta: meta, arguments: { n: 1 }, task: {} } })
  t.equal(started.status, 202)
  const mine = await call(app, { url: `/tasks/${started.body.taskId}`, headers })
  t.same([mine.status, mine.body.taskId], [200, started.body.taskId])
  t.ok(mine.headers.etag, 'with its ETag')
  for (const [who, id] of [['alice', 'never-was'], ['bob', started.body.taskId]]) {
    const res = await call(app, { url: `/tasks/${id}`, headers: { ...headers, 'x-user': who } })
    t.same([res.status, res.body.code, res.body.message], [404, -32602, `Unknown task: ${id}`], `${who}: ${id}`)
  }
})

t.test('a connection unused for connectionTtlMs is forgotten', async (t) => {
  const store = open({ prefix: `c${randomUUID().slice(0, 8)}:`, connectionTtlMs: 150 })
  t.teardown(() => store.close())
  await store.connections.setLogLevel('alice', 'debug')
  await store.connections.subscribe('alice', 'x:1')
  t.same(await store.connections.subscribers('x:1'), ['alice'])
  await sleep(200)
  t.equal(await store.connections.getLogLevel('alice'), undefined, 'expired in Redis')
  t.same(await store.connections.subscribers('x:1'), [], 'and no longer a subscriber')
  await store.connections.subscribe('bob', 'x:2')
  await store.mailbox.broadcast({ method: 'b' })
  t.equal(await store.mailbox.takeNotifications('alice'), undefined, 'a broadcast skips it')
  t.same((await store.mailbox.takeNotifications('bob'))?.notifications, [{ method: 'b' }])
})

t.test('a connection that only polls stays: once per half TTL its keys, registry entry and URI sets live a TTL again', async (t) => {
  const raw = new Redis(redis.url)
  t.teardown(() => raw.disconnect())
  const keysOf = async (prefix: string) => (await raw.keys(`${prefix}*`)).filter((k) => !k.endsWith('clock'))
  const ttls = async (prefix: string) => Object.fromEntries(await Promise.all((await keysOf(prefix)).map(async (k) => [k, await raw.pttl(k)] as const)))
  const age = async (prefix: string, ms: number) => {
    for (const k of await keysOf(prefix)) if ((await raw.pttl(k)) > 0) await raw.pexpire(k, ms)
  }

  const prefix = `k${randomUUID().slice(0, 8)}:`
  const store = open({ prefix, connectionTtlMs: 600_000 })
  t.teardown(() => store.close())
  await store.connections.setLogLevel('alice', 'debug')
  await store.connections.subscribe('alice', 'x:1')
  const expiring = Object.keys(await ttls(prefix))
  t.ok(expiring.length >= 3, 'its hash, its subscriptions, the URI\'s subscriber set')
  await age(prefix, 100_000)
  const registry = (await keysOf(prefix)).find((k) => k.endsWith('conns'))!
  await raw.zadd(registry, Date.now() - 500_000, 'alice')
  t.equal(await store.mailbox.takeNotifications('alice'), undefined, 'a poll that finds nothing')
  for (const [k, ms] of Object.entries(await ttls(prefix))) if (ms > 0) t.ok(ms > 500_000, `${k} lives a TTL again`)
  t.ok(Number(await raw.zscore(registry, 'alice')) > Date.now() - 60_000, 'and it is live in the registry')
  await age(prefix, 100_000)
  await store.mailbox.takeNotifications('alice')
  for (const [k, ms] of Object.entries(await ttls(prefix))) if (ms > 0) t.ok(ms <= 100_000, `${k}: not again within half the TTL (no command)`)

  // Half a TTL later (3 s of 6), the next poll keeps it alive again.
  const quick = `q${randomUUID().slice(0, 8)}:`
  const short = open({ prefix: quick, connectionTtlMs: 6000 })
  t.teardown(() => short.close())
  await short.connections.subscribe('bob', 'x:2')
  await short.mailbox.takeNotifications('bob')
  await sleep(3100)
  const before = Math.max(...Object.values(await ttls(quick)))
  t.ok(before <= 2900, 'the keys aged')
  await short.mailbox.takeNotifications('bob')
  t.ok(Math.min(...Object.values(await ttls(quick)).filter((ms) => ms > 0)) > 4000, 'kept alive again')
  t.same(await short.connections.subscribers('x:2'), ['bob'])
})

t.test('the polling connections remembered are bounded like the registry: one forgotten is kept alive again at its next poll', async (t) => {
  const raw = new Redis(redis.url)
  t.teardown(() => raw.disconnect())
  const store = open({ prefix: `b${randomUUID().slice(0, 8)}:`, connectionTtlMs: 600_000, sweepMs: 600_000, limits: { maxConnections: 2 } })
  t.teardown(() => store.close())
  const scripts = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0)
  const commandsOfPoll = async (owner: string) => {
    const before = await scripts()
    await store.mailbox.takeNotifications(owner)
    return (await scripts()) - before
  }
  t.ok((await commandsOfPoll('a')) >= 3, 'a first poll: the take, and the keep-alive (registry, keys)')
  await commandsOfPoll('b')
  t.equal(await commandsOfPoll('a'), 1, 'within half the TTL: the take alone')
  await commandsOfPoll('c') // a third: the oldest remembered (a) is dropped
  t.ok((await commandsOfPoll('a')) >= 3, 'a, forgotten, is kept alive again')
})

t.test('a lost wake-up is found by the sweep; a dropped subscriber reconnects', async (t) => {
  const prefix = `w${randomUUID().slice(0, 8)}:`
  const store = open({ prefix, sweepMs: 50 })
  t.teardown(() => store.close())
  const raw = new Redis(redis.url)
  t.teardown(() => raw.quit())
  await store.mailbox.enqueueRequest('alice', 'r1', { method: 'roots/list' })
  const waiting = store.mailbox.awaitAnswer('alice', 'r1', new AbortController().signal, 5000)
  await sleep(20)
  // The answer lands without its PUBLISH, as when the subscriber connection was down.
  await raw.set(`${prefix}a:{${sha1('alice')}}:r1`, JSON.stringify({ result: { roots: [] } }))
  t.same(await waiting, { result: { roots: [] } })

  const quiet = open({ prefix, sweepMs: 60_000 })
  t.teardown(() => quiet.close())
  const heard: string[] = []
  quiet.signals.onCancel((_o, id) => heard.push(id))
  await quiet.mailbox.enqueueRequest('alice', 'r2', { method: 'roots/list' })
  const pending = quiet.mailbox.awaitAnswer('alice', 'r2', new AbortController().signal, 5000)
  await sleep(20)
  await raw.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
  await store.mailbox.completeRequest('alice', 'r2', { result: { ok: true } })
  t.same(await pending, { result: { ok: true } }, 'answered, though its subscriber was cut')
  for (let i = 0; i < 100 && heard.length === 0; i++) {
    await store.signals.publishCancel('alice', 'c1', undefined)
    await sleep(20)
  }
  t.ok(heard.includes('c1'), 'and it hears again after reconnecting')
})

t.test('close rejects task runners too; an unreachable Redis fails fast and says so', async (t) => {
  const store = open({ prefix: `x${randomUUID().slice(0, 8)}:` })
  const now = new Date().toISOString()
  await store.tasks.createTask('alice', { taskId: 't', status: 'input_required', createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, inputRequests: { a: { method: 'roots/list' } } })
  const runner = store.tasks.awaitTaskAnswers('alice', 't', ['a'], new AbortController().signal)
  await sleep(20)
  const rejected = t.rejects(runner, /The store is closing/)
  await store.close()
  await rejected

  // An answer taken while the wait is being abandoned: the abort wins, whatever Redis says later.
  const racing = open({ prefix: `y${randomUUID().slice(0, 8)}:` })
  t.teardown(() => racing.close())
  await racing.tasks.createTask('alice', { taskId: 't', status: 'input_required', createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, inputRequests: { a: { method: 'roots/list' } } })
  await racing.tasks.answerTask('alice', 't', { a: { v: 1 } })
  const late = new AbortController()
  const raced = racing.tasks.awaitTaskAnswers('alice', 't', ['a'], late.signal)
  await Promise.resolve()
  late.abort(new Error('abandoned'))
  await t.rejects(raced, /abandoned/)

  const down = new RedisStore({ url: `redis://127.0.0.1:${redis.port + 1}`, redis: { retryStrategy: () => null, maxRetriesPerRequest: 0 } })
  t.teardown(() => down.close())
  await t.rejects(down.ping())
  await t.rejects(down.mailbox.awaitAnswer('alice', 'r', new AbortController().signal, 1000))
  t.equal(down.client.status === 'ready', false)
})

t.test('waiters of one connection share its wake-up channel; stray wake-ups are ignored', async (t) => {
  const store = open({ prefix: `s${randomUUID().slice(0, 8)}:` })
  t.teardown(() => store.close())
  const peer = open({ prefix: store.prefix })
  t.teardown(() => peer.close())
  await peer.ping()
  for (const id of ['r1', 'r2', 'r3']) await store.mailbox.enqueueRequest('alice', id, { method: 'roots/list' })
  const first = store.mailbox.awaitAnswer('alice', 'r1', new AbortController().signal, 5000)
  const second = store.mailbox.awaitAnswer('alice', 'r2', new AbortController().signal, 5000)
  await sleep(50)
  t.equal(await peer.mailbox.completeRequest('alice', 'r3', { result: { n: 3 } }), true, 'nobody here waits for r3')
  await peer.mailbox.completeRequest('alice', 'r1', { result: { n: 1 } })
  t.same(await first, { result: { n: 1 } })
  await peer.mailbox.completeRequest('alice', 'r2', { result: { n: 2 } })
  t.same(await second, { result: { n: 2 } })
})

t.test('Redis full (maxmemory, noeviction): a push is refused, and an acknowledgement (allow-oom) still runs and makes room', async (t) => {
  const full = await startRedis()
  t.teardown(() => full.stop())
  const admin = new Redis(full.url)
  t.teardown(() => admin.quit())
  const store = new RedisStore({ url: full.url, prefix: 'oom:' })
  t.teardown(() => store.close())
  const big = { method: 'notifications/message', params: { data: 'x'.repeat(10_000) } }
  for (let i = 0; i < 20; i++) await store.mailbox.pushNotification('alice', big)
  const group = (await store.mailbox.takeNotifications('alice'))!
  t.equal(group.notifications.length, 20)
  // Over the limit from here on: Redis refuses any function not flagged allow-oom. 100 KB under what
  // it uses, not 1 KB: Redis gives back idle clients' buffers on its own (a busy machine's CI once
  // saw the push fit), and the acknowledgement frees the group's ~200 KB.
  const used = Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))![1])
  await admin.config('SET', 'maxmemory-policy', 'noeviction')
  await admin.config('SET', 'maxmemory', String(used - 100_000))
  t.teardown(() => admin.config('SET', 'maxmemory', '0'))
  await t.rejects(store.mailbox.pushNotification('bob', big), { name: 'StoreUnavailable' }, 'full: a push is refused')
  t.equal(await store.mailbox.ackNotifications('alice', group.id), true, 'the acknowledgement runs')
  await t.resolves(store.mailbox.pushNotification('bob', big), 'and made room')
})
