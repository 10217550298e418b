import t from 'tap'
import { ifNoneMatch, etagOf } from '../../src/core/etag.js'
import { UriTemplate } from '../../src/core/uri-template.js'
import { decodeJsonHeader, encodeJsonHeader } from '../../src/headers.js'
import { loadConfig, loggerFromConfig } from '../../src/config.js'
import { MemoryStore } from '../../src/store/memory.js'
import { rejectsWithLimit } from '../helpers/store-contract.js'
import { copyOf } from '../../src/core/results.js'
import { McpServer } from '../../src/core/mcp-server.js'
import { coreContext } from '../helpers/helper.js'
import { evalScript, script } from '../../src/store/redis-eval.js'

t.test('JSON headers: plain, base64, and every way to get them wrong', async (t) => {
  t.equal(decodeJsonHeader('mcp-meta', undefined, 'object'), undefined)
  t.same(decodeJsonHeader('mcp-meta', '{"a":1}', 'object'), { a: 1 })
  t.same(decodeJsonHeader('mcp-meta', encodeJsonHeader({ who: 'Zoë' }), 'object'), { who: 'Zoë' })
  t.equal(encodeJsonHeader({ a: 'b' }), '{"a":"b"}', 'ASCII stays plain')
  t.match(encodeJsonHeader({ a: 'é' }), /^=\?base64\?[A-Za-z0-9+/=]+\?=$/)
  t.equal(decodeJsonHeader('mcp-request-state', '"abc"', 'string'), 'abc')
  t.throws(() => decodeJsonHeader('mcp-meta', ['{}', '{}'], 'object'), /Mcp-Meta header: sent more than once/)
  t.throws(() => decodeJsonHeader('mcp-meta', '"x"', 'object'), /must be a JSON object/)
  t.throws(() => decodeJsonHeader('mcp-request-state', '{}', 'string'), /Mcp-Request-State header: must be a JSON string/)
  t.throws(() => decodeJsonHeader('mcp-meta', '=?base64?e30?', 'object'), /not valid JSON/, 'an unterminated encoded form is not JSON')
})

t.test('URI templates: level 1 and reserved expansion', async (t) => {
  const simple = new UriTemplate('demo://items/{id}')
  t.same(simple.variables, ['id'])
  t.same(simple.match('demo://items/42'), { id: '42' })
  t.same(simple.match('demo://items/a%20b'), { id: 'a b' })
  t.equal(simple.match('demo://items/4/2'), undefined, '{var} does not span a slash')
  t.equal(simple.match('demo://items/'), undefined)
  t.equal(simple.match('demo://items/%E0%A4%A'), undefined, 'bad percent-encoding does not match')
  t.equal(simple.expand({ id: 'a/b' }), 'demo://items/a%2Fb')
  const two = new UriTemplate('db://{table}/rows/{row}')
  t.same(two.match('db://users/rows/7'), { table: 'users', row: '7' })
  const reserved = new UriTemplate('file:///{+path}')
  t.same(reserved.match('file:///a/b/c.txt'), { path: 'a/b/c.txt' })
  t.equal(reserved.expand({ path: 'a/b c' }), 'file:///a/b%20c')
  t.equal(new UriTemplate('x:{a}.{b}').match('x:1.2')?.b, '2', 'literal dots are escaped')
  t.equal(two.expand({ table: 'users' }), 'db://users/rows/', 'RFC 6570: an undefined variable expands to nothing')
  t.throws(() => new UriTemplate('x:{a}/{a}'), /appears twice/)
  t.throws(() => new UriTemplate('x:{?q}'), /only \{var\} and \{\+var\}/)
  t.throws(() => new UriTemplate('x:{a'), /only \{var\} and \{\+var\}/)
})

t.test('ETags', async (t) => {
  const tag = etagOf('{"a":1}')
  t.equal(tag, etagOf('{"a":1}'))
  t.not(tag, etagOf('{"a":2}'))
  t.ok(ifNoneMatch(tag, tag))
  t.ok(ifNoneMatch(`W/${tag}`, tag))
  t.ok(ifNoneMatch(` "zzz" ,${tag}`, tag))
  t.notOk(ifNoneMatch('"zzz"', tag))
  t.notOk(ifNoneMatch(undefined, tag))
})

t.test('configuration from the environment', async (t) => {
  const defaults = loadConfig({})
  t.same(
    [defaults.HOST, defaults.PORT, defaults.MCP_PAGE_SIZE, defaults.MCP_DEFAULT_PROTOCOL_VERSION, defaults.MCP_CACHE_SCOPE],
    ['127.0.0.1', 3000, 100, '2026-07-28', 'private']
  )
  const set = loadConfig({ PORT: '8080', MCP_PAGE_SIZE: '5', MCP_DEFAULT_PROTOCOL_VERSION: '2025-11-25', LOG_LEVEL: 'warn' })
  t.same([set.PORT, set.MCP_PAGE_SIZE, set.MCP_DEFAULT_PROTOCOL_VERSION, set.LOG_LEVEL], [8080, 5, '2025-11-25', 'warn'])
  t.throws(() => loadConfig({ PORT: 'eighty' }), /PORT="eighty"/)
  t.throws(() => loadConfig({ PORT: '70000' }), /PORT=70000/)
  t.throws(() => loadConfig({ MCP_PAGE_SIZE: '0' }), /MCP_PAGE_SIZE=0/)
  t.throws(() => loadConfig({ MCP_DEFAULT_PROTOCOL_VERSION: '2024-11-05' }), /MCP_DEFAULT_PROTOCOL_VERSION/)
  t.same(loggerFromConfig(set), { level: 'warn' })
  t.equal(loggerFromConfig(loadConfig({ LOG_LEVEL: 'silent' })), false, 'silent: no logger, so no child logger per request')
})

t.test('memory store: owners are isolated and memory is bounded', async (t) => {
  const store = new MemoryStore({ maxSubscriptions: 2, maxConnections: 2 })
  t.equal(await store.connections.subscribe('alice', 'x:1'), true)
  t.equal(await store.connections.subscribe('alice', 'x:1'), false, 'already subscribed')
  await store.connections.subscribe('alice', 'x:2')
  await rejectsWithLimit(t, store.connections.subscribe('alice', 'x:3'), 'ERR_STORE_TOO_MANY_SUBSCRIPTIONS', { status: 400, code: -32602, message: /Too many subscriptions \(limit 2\): unsubscribe first/ })
  t.same(await store.connections.subscriptions('bob'), [], 'bob sees nothing of alice')
  t.equal(await store.connections.unsubscribe('bob', 'x:1'), false)
  await store.connections.setLogLevel('bob', 'error')
  t.equal(await store.connections.getLogLevel('alice'), undefined)
  await store.connections.setLogLevel('carol', 'debug')
  t.same(await store.connections.subscriptions('alice'), [], 'the least recently used connection is forgotten beyond the limit')
  t.equal(await store.connections.getLogLevel('bob'), 'error')
  await store.close()
  t.equal(await store.connections.getLogLevel('bob'), undefined)
  await store.mailbox.enqueueRequest('dan', 'r1', { method: 'roots/list' })
  t.equal(await store.mailbox.completeRequest('dan', 'r1', { result: { roots: [] } }), true)
  t.same(await store.mailbox.awaitAnswer('dan', 'r1', new AbortController().signal, 1000), { result: { roots: [] } }, 'an answer that came before the wait is kept for it')
  await store.mailbox.enqueueRequest('dan', 'r2', { method: 'roots/list' })
  const waiting = store.mailbox.awaitAnswer('dan', 'r2', new AbortController().signal, 1000)
  await store.close()
  await t.rejects(waiting, /The store is closing/)
  const aborted = new AbortController()
  aborted.abort(new Error('gone'))
  await store.mailbox.enqueueRequest('dan', 'r3', { method: 'roots/list' })
  await t.rejects(store.mailbox.awaitAnswer('dan', 'r3', aborted.signal, 1000), /gone/)
  t.equal(await store.mailbox.getRequest('dan', 'r3'), undefined, 'withdrawn')
  const later = new AbortController()
  await store.mailbox.enqueueRequest('dan', 'r4', { method: 'roots/list' })
  const pending = store.mailbox.awaitAnswer('dan', 'r4', later.signal, 1000)
  later.abort(new Error('cancelled while waiting'))
  await t.rejects(pending, /cancelled while waiting/)
  t.equal(await store.mailbox.getRequest('dan', 'r4'), undefined, 'withdrawn when the wait is abandoned')
})

t.test('memory store tasks: a bounded number, and waits that end', async (t) => {
  const store = new MemoryStore({ maxTasks: 1 })
  const task = (taskId: string, ttlMs = 60_000) => ({
    taskId, status: 'working' as const, createdAt: new Date().toISOString(), lastUpdatedAt: new Date().toISOString(), ttlMs, pollIntervalMs: 1000
  })
  await store.tasks.createTask('a', task('t1'))
  await rejectsWithLimit(t, store.tasks.createTask('a', task('t2')), 'ERR_STORE_TOO_MANY_TASKS', { status: 503, message: /Too many tasks in progress \(1\)/ })
  const aborted = new AbortController()
  aborted.abort(new Error('no wait'))
  await t.rejects(store.tasks.awaitTaskAnswers('a', 't1', ['k'], aborted.signal), /no wait/)
  const gone = store.tasks.awaitTaskAnswers('a', 'nope', ['k'], new AbortController().signal)
  await t.rejects(gone, /The task is gone/)
  t.equal(await store.tasks.getTask('b', 't1'), undefined, 'another owner sees nothing')
})

t.test('CallContext: a context no round has set up refuses to ask, with a clear error', async (t) => {
  const { CallContext } = await import('../../src/core/call-context.js')
  const { ANONYMOUS } = await import('../../src/core/request-context.js')
  const sent: unknown[] = []
  const ctx = new CallContext(
    { requestId: 'r', protocolVersion: '2026-07-28', era: 'modern', meta: undefined, clientCapabilities: undefined, principal: ANONYMOUS, log: console, deadline: 0 },
    { progressToken: () => undefined, logFloor: () => undefined, send: (_c, m) => void sent.push(m) }
  )
  await t.rejects(ctx.elicit('Which?', { type: 'object' } as never), { message: 'This context cannot ask the client' })
  await ctx.progress(1)
  await ctx.sendLog('error', 'x')
  t.same(sent, [], 'no progress token and no log floor: nothing is sent')
  t.notOk(ctx.signal.aborted, 'no watch: the signal aborts only when told')
  ctx.abort(new Error('stop'))
  t.equal((ctx.signal.reason as Error).message, 'stop')
})

t.test('asError: an abort reason that is not an Error becomes one; an Error stays itself', async (t) => {
  const { asError } = await import('../../src/errors.js')
  const err = new Error('x')
  t.equal(asError(err), err)
  t.match(asError('gone'), { message: 'gone' })
  t.ok(asError(42) instanceof Error)
})

t.test('Tasks.served: a frozen task record is serialized once per version; polls share its text and ETag', async (t) => {
  const { CallContext } = await import('../../src/core/call-context.js')
  const { Tasks } = await import('../../src/tasks/task-methods.js')
  const store = new MemoryStore()
  t.teardown(() => store.close())
  const tasks = new Tasks(() => store, { until: () => Date.now() + 60_000 })
  const principal = { id: 'alice', scopes: [], anonymous: false }
  const ctx = new CallContext(
    { requestId: 'r', protocolVersion: '2026-07-28', era: 'modern', meta: undefined, clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } }, principal, log: console, deadline: 0 },
    { progressToken: () => undefined, logFloor: () => undefined, send: () => undefined }
  )
  const now = new Date().toISOString()
  await store.tasks.createTask('alice', { taskId: 'x', status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000, notify: true })
  const first = await tasks.served(ctx, 'x')
  t.equal(await tasks.served(ctx, 'x'), first, 'the same version: the same text, not serialized again')
  t.same(JSON.parse(first.representation.body), await tasks.get(ctx, 'x'), 'the text is what tasks/get answers on /mcp')
  t.match(first, { status: 'working', pollIntervalMs: 1000 })
  t.equal(first.representation.etag, etagOf(first.representation.body))
  t.notOk('notify' in JSON.parse(first.representation.body), 'the wire form leaves the store-only fields out')
  await store.tasks.updateTask('alice', 'x', { status: 'completed', result: { content: [] } })
  const done = await tasks.served(ctx, 'x')
  t.not(done.representation.etag, first.representation.etag, 'a new version: a new text and ETag')
  t.equal(done.status, 'completed')
  t.same(JSON.parse(done.representation.body), await tasks.get(ctx, 'x'))
})

t.test('ownerTag: the SHA-1 of an owner id, remembered, whatever the number or length of ids', async (t) => {
  const { ownerTag, sha1 } = await import('../../src/store/redis-keys.js')
  t.equal(ownerTag('alice'), sha1('alice'))
  t.equal(ownerTag('alice'), sha1('alice'), 'again, from memory')
  const long = 'x'.repeat(300)
  t.equal(ownerTag(long), sha1(long), 'a long id is digested, not kept')
  for (let i = 0; i < 5000; i++) ownerTag(`owner-${i}`)
  t.equal(ownerTag('owner-4999'), sha1('owner-4999'), 'past the bound the memory starts again')
  t.equal(ownerTag('owner-1'), sha1('owner-1'))
})

t.test('lua(): a script carries the prelude definitions it uses, with theirs, and reads literal arguments as ARGV', async (t) => {
  const { lua } = await import('../../src/store/redis-lua.js')
  const small = lua('return redis.call("HGET", K, A(1))').script
  t.match(small, /local K = KEYS\[1\]/)
  t.match(small, /redis\.call\("HGET", K, ARGV\[1\]\)/, 'A(1) is ARGV[1]: the configuration is written into the script, not sent')
  t.notMatch(small, /local function A\(/, 'no A where every argument index is literal')
  t.notMatch(small, /nowms|wake|TAG|CONN_TTL|PUB/, 'nothing it does not name')
  const waking = lua('-- A comment that names A (no call)\nwake(K)\nfor i = 2, #ARGV do redis.call("DEL", A(i)) end').script
  t.match(waking, /local P = __PREFIX__[\s\S]*local PUB = __PUB__[\s\S]*local K = KEYS\[1\][\s\S]*local function A\([\s\S]*local TAG = [\s\S]*local function wake\(/, 'wake brings P, PUB, K and TAG, in order; A(i) keeps A')
  t.notMatch(waking, /nowms|CONN_TTL|MAX_CONNS/)
  t.notMatch(lua('-- A stamp\nreturn 1').script, /local function A\(/, 'a comment is not a call')
  const own = [
    ['q|qb', "local q, qb = K .. ':nq', K .. ':nqb'"],
    ['pop', "local function pop() return redis.call('LPOP', q) end"],
    ['unused', 'local function unused() return 1 end']
  ] as const
  const popping = lua('return pop()', own).script
  t.match(popping, /^local K = KEYS\[1\]\nlocal q, qb = [^\n]*\nlocal function pop\(/, "a family's own definitions come after the prelude's they use")
  t.notMatch(popping, /unused/, 'and only those the script names')
  t.match(lua('return qb', own).script, /local q, qb = /, 'a definition of several names is kept for any of them')
  const { LATER } = await import('../../src/store/redis-lua.js')
  const split = lua(`local g = redis.call('GET', K)\nif g then return g end\n${LATER}\nreturn pop()`, own).script
  t.match(split, /^local K = KEYS\[1\]\nlocal g = [^\n]*\nif g then return g end\nlocal q, qb = [^\n]*\nlocal function pop\([\s\S]*\nreturn pop\(\)$/, 'what only the part after LATER names is defined there: an early return makes none of it')
  t.notMatch(split, LATER, 'the marker itself is gone')
  const { SCRIPTS } = await import('../../src/store/redis-scripts.js')
  t.match(SCRIPTS.mcpTake.script, /if not head then return nil end\nlocal CONN_TTL = [^\n]*\nlocal function nowms\(/, 'an empty poll returns before the clock and the queue helpers are defined')
  t.notMatch(SCRIPTS.mcpIndexTask.script, /local function (stamp|drop)\(/, 'the task ledger defines neither the use stamp nor drop, which it never calls')
  t.match(SCRIPTS.mcpIndexIdempotent.script, /local function drop\(/, 'the idempotency ledger, which calls drop, defines it')
})

t.test('lua(): the function form makes per call only what reads the call; the rest is the library\'s, made once', async (t) => {
  const { lua, LATER, readsOnly } = await import('../../src/store/redis-lua.js')
  const waking = lua('wake(K)\nreturn { nowms(), CONN_TTL }')
  t.match(waking.body, /^local K = KEYS\[1\]\nlocal TAG = [^\n]*\nlocal function wake\([\s\S]*\nreturn \{ nowms\(\), CONN_TTL \}$/, 'K, and TAG and wake made of it, per call')
  t.notMatch(waking.body, /local (P|PUB|CONN_TTL) =|local function nowms/, 'the configuration and the clock are not')
  t.same(waking.shared.map(([name]) => name), ['P', 'CONN_TTL', 'PUB', 'nowms'], 'they are shared, dependencies first')
  t.equal(waking.noWrites, undefined)
  t.equal(readsOnly(waking).noWrites, true)
  const own = [['q', "local q = K .. ':nq'"], ['pop', "local function pop() return redis.call('LPOP', q) end"], ['now2', 'local function now2() return nowms() end']] as const
  const split = lua(`local g = redis.call('GET', K)\nif g then return g end\n${LATER}\nreturn { pop(), now2() }`, own)
  t.match(split.body, /^local K = KEYS\[1\]\nlocal g = [^\n]*\nif g then return g end\nlocal q = [^\n]*\nlocal function pop\([^\n]*\nreturn \{ pop\(\), now2\(\) \}$/, 'a helper made of K is per call, and after LATER as in the script')
  t.same(split.shared.map(([name]) => name), ['nowms', 'now2'], "a family's helper of shared ones is shared")
})

t.test('library(): every step a function of one library named after its code; one definition of each shared name', async (t) => {
  const { lua, readsOnly } = await import('../../src/store/redis-lua.js')
  const { library } = await import('../../src/store/redis-functions.js')
  const steps = { get: readsOnly(lua("return redis.call('GET', K)")), stamp: lua("redis.call('SET', P .. K, nowms())") }
  const lib = library(steps, (text) => text.replaceAll('__PREFIX__', "'p:'"))
  t.match(lib.name, /^mcp_pure_http_[0-9a-f]{12}$/)
  t.same(lib.functions, { get: `${lib.name}_get`, stamp: `${lib.name}_stamp` }, 'function names are global in Redis: each carries the library')
  t.match(lib.code, new RegExp(`^#!lua name=${lib.name}\n`))
  t.match(lib.code, new RegExp(`function_name = '${lib.name}_get', callback = function\\(KEYS, ARGV\\)\n[\\s\\S]*end, flags = \\{ 'no-writes' \\} \\}`), 'a step that reads only is no-writes')
  t.notMatch(lib.code, /__LIB__|__PREFIX__/, 'configured, named')
  t.equal(lib.code.match(/local function nowms/g)?.length, 1, 'the clock is made once')
  t.equal(library(steps, (text) => text.replaceAll('__PREFIX__', "'p:'")).name, lib.name, 'the same code, the same name')
  t.not(library(steps, (text) => text.replaceAll('__PREFIX__', "'q:'")).name, lib.name, 'another configuration (or version), another library')
  const clash = [['X', 'local X = 1']] as const
  const other = [['X', 'local X = 2']] as const
  t.throws(() => library({ a: lua('return X', clash), b: lua('return X', other) }, (text) => text), /Two definitions of X/, 'two families may not define one name two ways')
})

t.test('configure(): the store configuration as Lua literals; any prefix is one safe string', async (t) => {
  const { configure, lua, luaString } = await import('../../src/store/redis-lua.js')
  t.equal(luaString("a'\n"), "'\\97\\39\\10'", 'every byte a decimal escape: no quote or newline can end it')
  t.equal(luaString('é'), "'\\195\\169'", 'UTF-8 bytes')
  const text = configure(lua('wake(K)\nreturn { CONN_TTL, MAX_CONNS }').script, { prefix: 'p:', connectionTtlMs: 5000, maxConnections: 7, publish: 'SPUBLISH' })
  t.match(text, /local P = '\\112\\58'/)
  t.match(text, /local CONN_TTL = 5000\n/)
  t.match(text, /local MAX_CONNS = 7\n/)
  t.match(text, /local PUB = '\\83\\80\\85\\66\\76\\73\\83\\72'/)
  t.notMatch(text, /__[A-Z_]+__/, 'no placeholder left')
  t.throws(() => configure(lua('return MAX_CONNS').script, { prefix: 'p:', connectionTtlMs: 1.5, maxConnections: 7, publish: 'PUBLISH' }), /connectionTtlMs must be an integer/)
})

t.test('copyOf: a shallow copy as a spread makes it, own __proto__ keys included', async (t) => {
  const tag = Symbol('tag')
  const original: Record<string | symbol, unknown> = { a: 1, nested: { b: 2 }, [tag]: 'kept' }
  const copy = copyOf(original)
  copy.c = 3
  t.not(copy, original)
  t.same(original, { a: 1, nested: { b: 2 }, [tag]: 'kept' }, 'the original is untouched')
  t.equal(copy.nested, original.nested, 'shallow')
  t.equal(copy[tag], 'kept', 'own symbol keys, as a spread copies them')
  // JSON from a client or an upstream may carry an own "__proto__" key: it stays a key, never a prototype.
  const hostile = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>
  const safe = copyOf(hostile)
  t.equal(Object.getPrototypeOf(safe), Object.prototype)
  t.equal((safe as { polluted?: boolean }).polluted, undefined)
  t.ok(Object.hasOwn(safe, '__proto__'), 'kept as an own key')
  t.same(JSON.parse(JSON.stringify(safe)), { ['__proto__']: { polluted: true }, a: 1 })
})

t.test('a tool result returned as an object with an own __proto__ key (an upstream\'s JSON) stays data', async (t) => {
  const mcp = new McpServer({ name: 't', version: '1' })
  mcp.tool({ name: 'relay' }, () => JSON.parse('{"content":[{"type":"text","text":"hi"}],"__proto__":{"isError":true}}') as never)
  const out = (await mcp.callTool('relay', { arguments: {} }, coreContext(mcp))) as Record<string, unknown>
  t.equal(out.isError, undefined, 'no isError through a prototype')
  t.equal(out.resultType, 'complete')
  t.same(out.content, [{ type: 'text', text: 'hi' }])
})

t.test('a Redis script: EVALSHA, EVAL only after NOSCRIPT, and every failure through the store\'s fail, thrown or rejected', async (t) => {
  const s = script('return 1')
  const fail = (err: unknown) => new Error(`store: ${(err as Error).message}`)
  const client = (evalsha: () => Promise<unknown>, evaluate: () => Promise<unknown> = async () => 'evaluated') => {
    const sent: string[] = []
    const c = {
      evalsha: (...args: unknown[]) => {
        sent.push(`evalsha ${String(args[0])}`)
        return evalsha()
      },
      eval: (...args: unknown[]) => {
        sent.push(`eval ${String(args[0])}`)
        return evaluate()
      }
    }
    return { c: c as never, sent }
  }
  const ok = client(async () => 'cached')
  t.equal(await evalScript(ok.c, s, ['k']), 'cached')
  t.same(ok.sent, [`evalsha ${s.sha}`], 'the script by its SHA only')
  const missing = client(() => Promise.reject(new Error('NOSCRIPT No matching script')))
  t.equal(await evalScript(missing.c, s, ['k']), 'evaluated')
  t.same(missing.sent, [`evalsha ${s.sha}`, 'eval return 1'], 'EVAL after NOSCRIPT')
  await t.rejects(evalScript(client(() => Promise.reject(new Error('READONLY'))).c, s, ['k'], fail), { message: 'store: READONLY' }, 'another error: no EVAL')
  const throwing = () => {
    throw new Error('closed')
  }
  await t.rejects(evalScript(client(throwing).c, s, ['k'], fail), { message: 'store: closed' }, 'EVALSHA that throws: a rejection')
  await t.rejects(evalScript(client(() => Promise.reject(new Error('NOSCRIPT x')), throwing).c, s, ['k'], fail), { message: 'store: closed' }, 'EVAL that throws')
  await t.rejects(evalScript(client(() => Promise.reject(new Error('NOSCRIPT x')), () => Promise.reject(new Error('OOM'))).c, s, ['k'], fail), { message: 'store: OOM' }, 'EVAL that fails')
})

t.test('a Redis function: FCALL; after "Function not found" the library is loaded and the call sent once more', async (t) => {
  const { functionsWay, runStep } = await import('../../src/store/redis-eval.js')
  const s = { ...script('return 1'), fn: 'lib_step' }
  const fail = (err: unknown) => new Error(`store: ${(err as Error).message}`)
  const sent: string[] = []
  const replies = [() => Promise.reject(new Error('ERR Function not found')), async () => 'called']
  const c = {
    fcall: (...args: unknown[]) => {
      sent.push(`fcall ${String(args[0])} ${String(args[1])} ${String(args[2])}`)
      return replies.shift()!()
    }
  }
  let loads = 0
  const way = functionsWay(async () => {
    loads++
  })
  t.equal(await runStep(c as never, way, s, ['k'], fail), 'called')
  t.same([sent, loads], [['fcall lib_step 1 k', 'fcall lib_step 1 k'], 1], 'loaded once, then called again')
  const refusing = functionsWay(() => Promise.reject(new Error('NOPERM')))
  replies.push(() => Promise.reject(new Error('ERR Function not found')))
  await t.rejects(runStep(c as never, refusing, s, ['k'], fail), { message: 'store: NOPERM' }, 'a load that fails fails the call, through fail')
  replies.push(() => Promise.reject(new Error('ERR Function not found')), () => Promise.reject(new Error('ERR Function not found')))
  await t.rejects(runStep(c as never, way, s, ['k'], fail), { message: 'store: ERR Function not found' }, 'once more only')
})

t.test('a representation sent where nothing said Vary before: Vary is ours alone', async (t) => {
  const { default: Fastify } = await import('fastify')
  const { sendRepresentation } = await import('../../src/http/representation.js')
  const app = Fastify()
  t.teardown(() => app.close())
  const rep = { etag: '"abc"', body: { ok: true } } as never
  app.get('/x', (request, reply) => sendRepresentation(request, reply, rep, { cacheScope: 'private', ttlMs: 30_000 } as never))
  const res = await app.inject({ url: '/x' })
  t.same([res.statusCode, res.headers.vary, res.headers['cache-control'], res.headers.etag, res.json()], [200, 'Mcp-Protocol-Version, Mcp-Meta, Authorization', 'private, max-age=30', '"abc"', { ok: true }])
  t.equal((await app.inject({ url: '/x', headers: { 'if-none-match': '"abc"' } })).statusCode, 304)
})

t.test('watchResources: watchers counted per URI; resourceWatch hears of the first and the last; updates filtered', async (t) => {
  const mcp = new McpServer({ name: 'w', version: '1' })
  const events: string[] = []
  mcp.resourceWatch = { first: (uri) => events.push(`first ${uri}`), last: (uri) => events.push(`last ${uri}`) }
  const heard: string[] = []
  const stopA = mcp.watchResources(new Set(['x://1']), (uri) => heard.push(`a ${uri}`))
  const stopB = mcp.watchResources(new Set(['x://1', 'x://2']), (uri) => heard.push(`b ${uri}`))
  t.same([mcp.watching('x://1'), mcp.watching('x://2'), mcp.watching('x://3')], [2, 1, 0])
  t.same(events, ['first x://1', 'first x://2'], 'once per URI')
  await mcp.resourceUpdated('x://2')
  await mcp.resourceUpdated('x://3')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(heard, ['b x://2'], 'each watcher hears its own URIs only')
  stopA()
  t.same(events, ['first x://1', 'first x://2'], 'x://1 still watched by the other')
  stopB()
  t.same(events, ['first x://1', 'first x://2', 'last x://1', 'last x://2'])
  t.equal(mcp.watching('x://1'), 0)
})
