import { lua, readsOnly, type Definitions, type Lua } from './redis-lua.js'
import { PART, REGISTRY } from './redis-keys.js'

/**
 * The running tasks' counts in a ledger's totals (`:u`): `*r` in all, `<h>r` an owner's, written
 * with the bytes in the same HSET, so that booking a task reads one hash instead of two ZCARDs
 * besides (the sets stay, for the first to expire). A count absent is counted from its set once.
 */
const RUNNING = 'r'

/**
 * Scripts on the registry slot (`P {g}:...`, one slot for the whole deployment): which connections
 * exist and in what order they were used, and sessions; and the ledgers that bound tasks and
 * idempotency records over all owners, on the registry slot or in shards on slots of their own
 * (`P {g<k>.<j>}:...`, see `redis-ledger.ts`). Each is one small sorted-set step; the owners' own
 * state is elsewhere.
 *
 * Their shared definitions (each script takes only those it names, see {@link lua}): `G` the
 * registry's key prefix, `stamp(now)` a use stamp, and a ledger Z, which is the script's K (a
 * ledger's parts are named after it, so a shard's are on its slot). It keeps records (Z, member ->
 * expiry), their bytes (`:b`, member -> bytes), the bytes in all and per owner (`:u`, '*' and <h> ->
 * bytes, and '~' the time of the last sweep), and each owner's records (`:o:<h>`, member -> expiry).
 * A member is `<h>:<id>`, h the owner's SHA-1. Tasks also keep the running ones (`:r`, and per owner
 * `:r:<h>`) and their counts in the totals (`*r` and `<h>r`, see {@link RUNNING}). The store-wide
 * bounds a script is given are its shard's share.
 *
 * Every `redis.call` costs about a microsecond of Redis' one thread, so the steps are counted: what
 * expired is dropped in batches (a sweep at most every 100 ms, or at once when a bound would refuse),
 * one command per set for the whole batch rather than eight per record.
 */
const SHARED: Definitions = [
  ['G', `local G = P .. '${REGISTRY.tag}'`],
  // A strictly increasing use stamp (ms, with sub-ms steps), so that least-recently-used order is exact.
  [
    'stamp',
    `local function stamp(now)
  local s = math.max(now, tonumber(redis.call('GET', G .. '${REGISTRY.clock}') or 0) + 0.001)
  redis.call('SET', G .. '${REGISTRY.clock}', string.format('%.3f', s))
  return s
end`
  ],
  ['owner', "local function owner(m) return string.match(m, '^([^:]+):') end"],
  // A count kept in the totals U, lowered by n; absent (a ledger written before counts were kept,
  // or an owner gone), it stays absent: whoever needs it counts the set once (see mcpIndexTask).
  [
    'lower',
    `local function lower(U, f, n)
  local c = redis.call('HGET', U, f)
  if c then redis.call('HSET', U, f, math.max(0, tonumber(c) - n)) end
end`
  ],
  // Drop the members ms of the ledger Z: their bytes, their place in every set, their owners' totals.
  [
    'dropAll',
    `local function dropAll(Z, ms)
  if #ms == 0 then return end
  local U = Z .. '${PART.ledgerUsage}'
  local bs = redis.call('HMGET', Z .. '${PART.ledgerBytes}', unpack(ms))
  redis.call('HDEL', Z .. '${PART.ledgerBytes}', unpack(ms))
  redis.call('ZREM', Z, unpack(ms))
  local running = redis.call('ZREM', Z .. '${PART.ledgerRunning}', unpack(ms))
  local per, total = {}, 0
  for i, m in ipairs(ms) do
    local oh, b = owner(m), tonumber(bs[i] or 0)
    local o = per[oh]
    if not o then o = { {}, 0 } per[oh] = o end
    o[1][#o[1] + 1] = m
    o[2] = o[2] + b
    total = total + b
  end
  for oh, o in pairs(per) do
    redis.call('ZREM', Z .. '${PART.ledgerOwner}' .. oh, unpack(o[1]))
    local ran = running > 0 and redis.call('ZREM', Z .. '${PART.ledgerRunningOwner}' .. oh, unpack(o[1])) or 0
    if redis.call('HINCRBY', U, oh, -o[2]) <= 0 then redis.call('HDEL', U, oh, oh .. '${RUNNING}')
    elseif ran > 0 then lower(U, oh .. '${RUNNING}', ran) end
  end
  redis.call('HINCRBY', U, '*', -total)
  if running > 0 then lower(U, '*${RUNNING}', running) end
end`
  ],
  ['drop', 'local function drop(Z, m) dropAll(Z, { m }) end'],
  // A record's bytes are now b (old before it: 0 for a new one).
  [
    'recount',
    `local function recount(Z, m, b, old)
  redis.call('HSET', Z .. '${PART.ledgerBytes}', m, b)
  if b ~= old then
    redis.call('HINCRBY', Z .. '${PART.ledgerUsage}', '*', b - old)
    redis.call('HINCRBY', Z .. '${PART.ledgerUsage}', owner(m), b - old)
  end
end`
  ],
  // A record of b bytes (old before it: 0 for a new one), expiring at the time at.
  [
    'put',
    `local function put(Z, m, at, b, old)
  redis.call('ZADD', Z, at, m)
  redis.call('ZADD', Z .. '${PART.ledgerOwner}' .. owner(m), at, m)
  recount(Z, m, b, old)
end`
  ],
  // Drop what expired, when a sweep is due (100 ms after the last) or forced (a bound would refuse:
  // bounds count only the living). Between sweeps, records expired since count for at most 100 ms.
  // last: the '~' field when the caller read it with the totals (else it is read here).
  [
    'sweep',
    `local function sweep(Z, now, force, last)
  if not force and now - tonumber(last or redis.call('HGET', Z .. '${PART.ledgerUsage}', '~') or 0) < 100 then return false end
  redis.call('HSET', Z .. '${PART.ledgerUsage}', '~', now)
  local ms
  repeat
    ms = redis.call('ZRANGE', Z, '-inf', now, 'BYSCORE', 'LIMIT', 0, 500)
    dropAll(Z, ms)
  until #ms < 500
  return true
end`
  ],
  // Ms until the first member of z expires (at least 1): when space is certain to free.
  [
    'first',
    `local function first(z, now)
  local f = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
  if #f == 0 then return 1000 end
  return math.max(1, math.ceil(tonumber(f[2]) - now))
end`
  ]
]

const registry = (body: string): Lua => lua(body, SHARED)

export const REGISTRY_SCRIPTS = {
  /**
   * K connections, A(1) owner: a use of a connection, which becomes the most recently used. Returns
   * the owners to forget: beyond MAX_CONNS the least recently used, and (a few at a time) those idle
   * past CONN_TTL.
   */
  mcpRegister: registry(`
local now = nowms()
local gone = redis.call('ZRANGE', K, '-inf', now - CONN_TTL, 'BYSCORE', 'LIMIT', 0, 10)
for _, s in ipairs(gone) do redis.call('ZREM', K, s) end
if not redis.call('ZSCORE', K, A(1)) and redis.call('ZCARD', K) >= MAX_CONNS then
  gone[#gone + 1] = redis.call('ZPOPMIN', K)[1]
end
redis.call('ZADD', K, stamp(now), A(1))
return gone
`),

  /** K connections, A(1..n) owners: those of them still live (all live ones when none is given). */
  mcpLive: readsOnly(registry(`
local fresh = nowms() - CONN_TTL
if #ARGV == 0 then return redis.call('ZRANGE', K, '(' .. fresh, '+inf', 'BYSCORE') end
local out = {}
for i = 1, #ARGV do
  local at = redis.call('ZSCORE', K, ARGV[i])
  if at and tonumber(at) > fresh then out[#out + 1] = ARGV[i] end
end
return out
`)),

  /** K sessions, A(1) id, A(2) ttl, A(3) most sessions: a new session; beyond the bound the least recently used goes. */
  mcpCreateSession: registry(`
local now = nowms()
redis.call('ZREMRANGEBYSCORE', K, '-inf', now - tonumber(A(2)))
if redis.call('ZCARD', K) >= tonumber(A(3)) then
  redis.call('DEL', G .. '${REGISTRY.session}' .. redis.call('ZPOPMIN', K)[1])
end
redis.call('SET', G .. '${REGISTRY.session}' .. A(1), '1', 'PX', tonumber(A(2)))
redis.call('ZADD', K, stamp(now), A(1))
`),

  /** K sessions, A(1) id, A(2) ttl: 1 (and its expiry pushed back) when the session is live. */
  mcpTouchSession: registry(`
if redis.call('PEXPIRE', G .. '${REGISTRY.session}' .. A(1), tonumber(A(2))) == 1 then
  redis.call('ZADD', K, stamp(nowms()), A(1))
  return 1
end
redis.call('ZREM', K, A(1))
return 0
`),

  /**
   * K task index `P {g}:tasks` (or a shard's), A(1) member (`<h>:<taskId>`), A(2) ttl ms, A(3) bytes, A(4) 'create'
   * or 'finish', A(5) most running, A(6) most running per owner, A(7) most bytes, A(8) most bytes per
   * owner. create: {'ok'}, or the bound reached ('quota' an owner's, 'running' or 'full' the
   * store's) with the ms until its first record expires, the limit (and for a quota, of what). finish: the task leaves the
   * running ones and counts its new bytes; {'large'} when they do not fit (the caller keeps it small).
   */
  mcpIndexTask: registry(`
local m = A(1)
local oh = owner(m)
local R, RO, U, B = K .. '${PART.ledgerRunning}', K .. '${PART.ledgerRunningOwner}' .. oh, K .. '${PART.ledgerUsage}', K .. '${PART.ledgerBytes}'
local ohr = oh .. '${RUNNING}'
local b = tonumber(A(3))
if A(4) == 'create' then
  local now = nowms()
  local u, mine, running
  -- The totals, with the running counts; a count absent (a ledger written before they were kept, an
  -- owner whose records all expired) is counted from its set, once: the write below keeps it.
  local function totals()
    u = redis.call('HMGET', U, oh, '*', ohr, '*${RUNNING}', '~')
    mine = tonumber(u[3] or redis.call('ZCARD', RO))
    running = tonumber(u[4] or redis.call('ZCARD', R))
  end
  local function refusal()
    if mine >= tonumber(A(6)) then return { 'quota', first(RO, now), A(6), 'running tasks' } end
    if tonumber(u[1] or 0) + b > tonumber(A(8)) then return { 'quota', first(K .. '${PART.ledgerOwner}' .. oh, now), A(8), 'bytes of tasks' } end
    if running >= tonumber(A(5)) then return { 'running', first(R, now), A(5) } end
    if tonumber(u[2] or 0) + b > tonumber(A(7)) then return { 'full', first(K, now), A(7) } end
  end
  totals()
  local swept = sweep(K, now, false, u[5])
  if swept then totals() end
  local refused = refusal()
  if refused and not swept then
    sweep(K, now, true)
    totals()
    refused = refusal()
  end
  if refused then return refused end
  local at = now + tonumber(A(2))
  local old = redis.call('ZADD', K, at, m) == 1 and 0 or tonumber(redis.call('HGET', B, m) or 0)
  redis.call('ZADD', K .. '${PART.ledgerOwner}' .. oh, at, m)
  redis.call('HSET', B, m, b)
  mine = mine + redis.call('ZADD', RO, at, m)
  running = running + redis.call('ZADD', R, at, m)
  redis.call('HSET', U, oh, tonumber(u[1] or 0) - old + b, '*', tonumber(u[2] or 0) - old + b, ohr, mine, '*${RUNNING}', running)
  return { 'ok' }
end
-- finish: creates sweep; a finish sweeps only when what expired would make it refuse.
local function finish()
  local old = redis.call('HGET', B, m)
  if not old then return { 'ok' } end
  old = tonumber(old)
  local u = redis.call('HMGET', U, oh, '*', ohr, '*${RUNNING}')
  local counts = {}
  if redis.call('ZREM', R, m) == 1 then
    redis.call('ZREM', RO, m)
    if u[3] then counts[#counts + 1] = ohr counts[#counts + 1] = math.max(0, tonumber(u[3]) - 1) end
    if u[4] then counts[#counts + 1] = '*${RUNNING}' counts[#counts + 1] = math.max(0, tonumber(u[4]) - 1) end
  end
  if tonumber(u[1] or 0) - old + b > tonumber(A(8)) or tonumber(u[2] or 0) - old + b > tonumber(A(7)) then
    if #counts > 0 then redis.call('HSET', U, unpack(counts)) end
    return { 'large' }
  end
  redis.call('HSET', B, m, b)
  redis.call('HSET', U, oh, tonumber(u[1] or 0) - old + b, '*', tonumber(u[2] or 0) - old + b, unpack(counts))
  return { 'ok' }
end
local out = finish()
if out[1] == 'large' then
  sweep(K, nowms(), true)
  out = finish()
end
return out
`),

  /**
   * K idempotency index `P {g}:idem` (or a shard's), A(1) member (`<h>:<requestId>`), A(2) ms it lives from now,
   * A(3) bytes, A(4) 'claim' | 'finish' | 'renew' | 'drop', A(5) most records, A(6) most bytes,
   * A(7) most records per owner, A(8) most bytes per owner. Never evicts: a claim or outcome that
   * does not fit is refused, {'quota' | 'full', ms until the first record expires, the limit}
   * (a refused outcome also leaves the index: the caller deletes the record). Else {'ok'}.
   */
  mcpIndexIdempotent: registry(`
local now = nowms()
local m, mode = A(1), A(4)
local oh = owner(m)
local O = K .. '${PART.ledgerOwner}' .. oh
if mode == 'drop' then drop(K, m) return { 'ok' } end
if mode == 'renew' then
  if redis.call('ZSCORE', K, m) then
    redis.call('ZADD', K, now + tonumber(A(2)), m)
    redis.call('ZADD', O, now + tonumber(A(2)), m)
  end
  return { 'ok' }
end
local swept = sweep(K, now, false)
local b = tonumber(A(3))
local function refusal()
  local old = tonumber(redis.call('HGET', K .. '${PART.ledgerBytes}', m) or 0)
  local new = old == 0 and 1 or 0
  local u = redis.call('HMGET', K .. '${PART.ledgerUsage}', oh, '*')
  local mine = redis.call('ZCARD', O) + new
  if mine > tonumber(A(7)) or tonumber(u[1] or 0) - old + b > tonumber(A(8)) then
    return { 'quota', first(O, now), mine > tonumber(A(7)) and A(7) or A(8) }, old
  end
  local all = redis.call('ZCARD', K) + new
  if all > tonumber(A(5)) or tonumber(u[2] or 0) - old + b > tonumber(A(6)) then
    return { 'full', first(K, now), all > tonumber(A(5)) and A(5) or A(6) }, old
  end
  return nil, old
end
local refused, old = refusal()
if refused and not swept then
  sweep(K, now, true)
  refused, old = refusal()
end
if refused then
  if mode == 'finish' then drop(K, m) end
  return refused
end
put(K, m, now + tonumber(A(2)), b, old)
return { 'ok' }
`)
} as const
