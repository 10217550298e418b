/**
 * The Lua scripts of {@link RedisStore}: each runs atomically inside Redis, so that a request is
 * handed to one poller once, an ack removes exactly its group, an answer completes a request once,
 * a terminal task stays terminal, and the bounds hold across instances.
 *
 * Every script gets the same first three arguments: the key prefix, the connection TTL (ms) and the
 * most connections kept; the rest follow (`A(1)` is the first of them). Key names are derived inside
 * the scripts (one Redis primary; Redis Cluster is not supported). An owner's keys are named by the
 * SHA-1 of its id, so that no owner id can spell another owner's key. Time is Redis' own clock.
 */

const PRELUDE = `
local P = ARGV[1]
local CONN_TTL = tonumber(ARGV[2])
local MAX_CONNS = tonumber(ARGV[3])
local function A(i) return ARGV[i + 3] end
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A strictly increasing use stamp (ms, with sub-ms steps), so that least-recently-used order is exact.
local function stamp(now)
  local s = math.max(now, tonumber(redis.call('GET', P .. 'clock') or 0) + 0.001)
  redis.call('SET', P .. 'clock', string.format('%.3f', s))
  return s
end
local function ck(owner) return P .. 'c:' .. redis.sha1hex(owner) end
local TERMINAL = { ['"completed"'] = true, ['"failed"'] = true, ['"cancelled"'] = true }
-- Drop everything a connection holds (its subscriptions leave the per-URI sets too).
local function forget(owner)
  local c = ck(owner)
  for _, uri in ipairs(redis.call('SMEMBERS', c .. ':subs')) do redis.call('SREM', P .. 'sub:' .. uri, owner) end
  redis.call('DEL', c, c .. ':subs', c .. ':nq', c .. ':rq', c .. ':rm', c .. ':rs')
end
-- A use of a connection: it becomes the most recently used; beyond MAX_CONNS the least recently
-- used one is forgotten, and so are (a few at a time) those idle past CONN_TTL.
local function touch(owner, now)
  local conns = P .. 'conns'
  for _, s in ipairs(redis.call('ZRANGE', conns, '-inf', now - CONN_TTL, 'BYSCORE', 'LIMIT', 0, 10)) do
    forget(s)
    redis.call('ZREM', conns, s)
  end
  if not redis.call('ZSCORE', conns, owner) and redis.call('ZCARD', conns) >= MAX_CONNS then
    forget(redis.call('ZPOPMIN', conns)[1])
  end
  redis.call('ZADD', conns, stamp(now), owner)
  local c = ck(owner)
  for _, k in ipairs({ c, c .. ':subs', c .. ':rq', c .. ':rm', c .. ':rs' }) do redis.call('PEXPIRE', k, CONN_TTL) end
end
-- Record an answer and wake whoever waits for it, on any instance.
local function settle(owner, id, answer, ttl)
  local name = 'a:' .. redis.sha1hex(owner) .. ':' .. id
  redis.call('SET', P .. name, answer, 'PX', ttl)
  redis.call('PUBLISH', P .. 'wake', name)
end
-- Notifications are stored as "<ms> <json>": the JSON is never decoded here, so it comes back verbatim.
local function push(q, now, json, max, ttl)
  redis.call('RPUSH', q, now .. ' ' .. json)
  if redis.call('LLEN', q) > max then redis.call('LPOP', q) end
  redis.call('PEXPIRE', q, ttl)
end
`

const script = (body: string) => PRELUDE + body

export const SCRIPTS = {
  /** A(1) owner, A(2) field, A(3) value: set a connection field (log level, legacy client). */
  mcpSetField: script(`
local now = nowms()
touch(A(1), now)
local c = ck(A(1))
redis.call('HSET', c, A(2), A(3))
redis.call('PEXPIRE', c, CONN_TTL)
`),

  /** A(1) owner, A(2) uri, A(3) max subscriptions: 1 added, 0 already, -1 full. */
  mcpSubscribe: script(`
local now = nowms()
touch(A(1), now)
local s = ck(A(1)) .. ':subs'
if redis.call('SISMEMBER', s, A(2)) == 1 then return 0 end
if redis.call('SCARD', s) >= tonumber(A(3)) then return -1 end
redis.call('SADD', s, A(2))
redis.call('PEXPIRE', s, CONN_TTL)
local u = P .. 'sub:' .. A(2)
redis.call('SADD', u, A(1))
redis.call('PEXPIRE', u, CONN_TTL)
return 1
`),

  /** A(1) owner, A(2) uri: 1 removed, 0 was not subscribed. */
  mcpUnsubscribe: script(`
if redis.call('SREM', ck(A(1)) .. ':subs', A(2)) == 0 then return 0 end
redis.call('SREM', P .. 'sub:' .. A(2), A(1))
return 1
`),

  /** A(1) uri: the live connections subscribed to it (forgotten ones are dropped from the set). */
  mcpSubscribers: script(`
local fresh = nowms() - CONN_TTL
local u = P .. 'sub:' .. A(1)
local out = {}
for _, owner in ipairs(redis.call('SMEMBERS', u)) do
  local at = redis.call('ZSCORE', P .. 'conns', owner)
  if at and tonumber(at) > fresh then out[#out + 1] = owner else redis.call('SREM', u, owner) end
end
return out
`),

  /** A(1) owner, A(2) JSON, A(3) max queued, A(4) notification TTL. */
  mcpPush: script(`
local now = nowms()
touch(A(1), now)
push(ck(A(1)) .. ':nq', now, A(2), tonumber(A(3)), tonumber(A(4)))
`),

  /** A(1) JSON, A(2) max queued, A(3) notification TTL: to every live connection, none touched. */
  mcpBroadcast: script(`
local now = nowms()
for _, owner in ipairs(redis.call('ZRANGE', P .. 'conns', '(' .. (now - CONN_TTL), '+inf', 'BYSCORE')) do
  push(ck(owner) .. ':nq', now, A(1), tonumber(A(2)), tonumber(A(3)))
end
`),

  /** A(1) owner, A(2) id for a new group, A(3) batch size, A(4) notification TTL: the group's JSON or nil. */
  mcpTake: script(`
local c = ck(A(1))
local g = redis.call('HGET', c, 'group')
if g then return g end
local q = c .. ':nq'
-- Nothing queued (the usual poll): one command, no clock read.
local head = redis.call('LINDEX', q, 0)
if not head then return nil end
local fresh = nowms() - tonumber(A(4))
while head and tonumber(string.match(head, '^(%d+) ')) < fresh do
  redis.call('LPOP', q)
  head = redis.call('LINDEX', q, 0)
end
local items = redis.call('LRANGE', q, 0, tonumber(A(3)) - 1)
if #items == 0 then return nil end
redis.call('LTRIM', q, #items, -1)
local parts = {}
for i, item in ipairs(items) do parts[i] = string.sub(item, string.find(item, ' ', 1, true) + 1) end
g = '{"id":' .. cjson.encode(A(2)) .. ',"notifications":[' .. table.concat(parts, ',') .. ']}'
redis.call('HSET', c, 'group', g, 'gid', A(2))
redis.call('PEXPIRE', c, CONN_TTL)
return g
`),

  /** A(1) owner, A(2) group id: 1 when it was the current group (or the one acknowledged last). */
  mcpAck: script(`
local c = ck(A(1))
if redis.call('HGET', c, 'gid') == A(2) then
  redis.call('HDEL', c, 'group', 'gid')
  redis.call('HSET', c, 'acked', A(2))
  return 1
end
if redis.call('HGET', c, 'acked') == A(2) then return 1 end
return 0
`),

  /**
   * A(1) owner, A(2) id, A(3) request JSON, A(4) max requests, A(5) 1 to discard the oldest active
   * one when full, A(6) answer TTL, A(7) the discarded one's answer: 'FULL' or 'OK'.
   */
  mcpEnqueue: script(`
local now = nowms()
touch(A(1), now)
local c = ck(A(1))
local rq, rm, rs = c .. ':rq', c .. ':rm', c .. ':rs'
if redis.call('LLEN', rq) >= tonumber(A(4)) then
  if A(5) ~= '1' then return 'FULL' end
  local victim
  for _, id in ipairs(redis.call('LRANGE', rq, 0, -1)) do
    if string.match(redis.call('HGET', rs, id) or '', '^%d+ %-') then victim = id break end
  end
  if not victim then return 'FULL' end
  redis.call('LREM', rq, 1, victim)
  redis.call('HDEL', rm, victim)
  redis.call('HDEL', rs, victim)
  settle(A(1), victim, A(7), tonumber(A(6)))
end
redis.call('RPUSH', rq, A(2))
redis.call('HSET', rm, A(2), A(3))
redis.call('HSET', rs, A(2), now .. ' - 0')
for _, k in ipairs({ rq, rm, rs }) do redis.call('PEXPIRE', k, CONN_TTL) end
return 'OK'
`),

  /** A(1) owner, A(2) redelivery ms: {id, JSON, createdAt, deliveredAt, deliveries} of the oldest active one, or nil. */
  mcpClaim: script(`
local now = nowms()
local c = ck(A(1))
local rs = c .. ':rs'
for _, id in ipairs(redis.call('LRANGE', c .. ':rq', 0, -1)) do
  local created, delivered, n = string.match(redis.call('HGET', rs, id) or '', '^(%d+) (%S+) (%d+)$')
  if created and (delivered == '-' or now - tonumber(delivered) >= tonumber(A(2))) then
    n = tonumber(n) + 1
    redis.call('HSET', rs, id, created .. ' ' .. now .. ' ' .. n)
    return { id, redis.call('HGET', c .. ':rm', id), created, tostring(now), tostring(n) }
  end
end
return nil
`),

  /** A(1) owner, A(2) id, A(3) answer JSON, A(4) answer TTL: 1 once, 0 when unknown or already complete. */
  mcpComplete: script(`
local c = ck(A(1))
if redis.call('HDEL', c .. ':rm', A(2)) == 0 then return 0 end
redis.call('HDEL', c .. ':rs', A(2))
redis.call('LREM', c .. ':rq', 1, A(2))
settle(A(1), A(2), A(3), tonumber(A(4)))
return 1
`),

  /** A(1) owner, A(2) id: withdraw a request nobody waits for any more (and a late answer). */
  mcpWithdraw: script(`
local c = ck(A(1))
redis.call('HDEL', c .. ':rm', A(2))
redis.call('HDEL', c .. ':rs', A(2))
redis.call('LREM', c .. ':rq', 1, A(2))
redis.call('DEL', P .. 'a:' .. redis.sha1hex(A(1)) .. ':' .. A(2))
`),

  /**
   * A(1) task key, A(2) index member, A(3) ttl ms, A(4) max tasks, A(5) 1 when inputRequests is set,
   * A(6) number of field/value pairs, then the pairs, then the inputRequests pairs: 1, or -1 when full.
   */
  mcpCreateTask: script(`
local now = nowms()
local index = P .. 'tasks'
redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
if redis.call('ZCARD', index) >= tonumber(A(4)) then return -1 end
local key, ttl = A(1), tonumber(A(3))
redis.call('DEL', key, key .. ':in', key .. ':ans')
local n = tonumber(A(6))
for i = 0, n - 1 do redis.call('HSET', key, A(7 + 2 * i), A(8 + 2 * i)) end
if A(5) == '1' then
  redis.call('HSET', key, 'inputRequests', '1')
  for i = 7 + 2 * n, #ARGV - 3, 2 do redis.call('HSET', key .. ':in', A(i), A(i + 1)) end
  redis.call('PEXPIRE', key .. ':in', ttl)
end
redis.call('PEXPIRE', key, ttl)
redis.call('ZADD', index, now + ttl, A(2))
return 1
`),

  /** A(1) task key: {fields, inputRequests} or nil. */
  mcpGetTask: script(`
local key = A(1)
local fields = redis.call('HGETALL', key)
if #fields == 0 then return nil end
return { fields, redis.call('HGETALL', key .. ':in') }
`),

  /**
   * A(1) task key, A(2) lastUpdatedAt JSON, A(3) 'keep' | 'set' | 'del' for inputRequests, A(4)
   * number of fields to set, the pairs, the number of fields to delete, their names, then the
   * inputRequests pairs: the task as {fields, inputRequests}, or nil when unknown or terminal.
   */
  mcpUpdateTask: script(`
local key = A(1)
local status = redis.call('HGET', key, 'status')
if not status or TERMINAL[status] then return nil end
local i = 5
for _ = 1, tonumber(A(4)) do redis.call('HSET', key, A(i), A(i + 1)) i = i + 2 end
local dels = tonumber(A(i))
i = i + 1
for _ = 1, dels do redis.call('HDEL', key, A(i)) i = i + 1 end
local ir = key .. ':in'
if A(3) ~= 'keep' then redis.call('DEL', ir) redis.call('HDEL', key, 'inputRequests') end
if A(3) == 'set' then
  redis.call('HSET', key, 'inputRequests', '1')
  for j = i, #ARGV - 3, 2 do redis.call('HSET', ir, A(j), A(j + 1)) end
  redis.call('PEXPIRE', ir, redis.call('PTTL', key))
end
redis.call('HSET', key, 'lastUpdatedAt', A(2))
return { redis.call('HGETALL', key), redis.call('HGETALL', ir) }
`),

  /**
   * A(1) task key, A(2) wake name, A(3) lastUpdatedAt JSON, then key/answer pairs: the keys taken
   * (outstanding ones only), or nil when the task is unknown.
   */
  mcpAnswerTask: script(`
local key = A(1)
if redis.call('EXISTS', key) == 0 then return nil end
local ir, ans = key .. ':in', key .. ':ans'
local taken = {}
for i = 4, #ARGV - 3, 2 do
  if redis.call('HDEL', ir, A(i)) == 1 then
    redis.call('HSET', ans, A(i), A(i + 1))
    taken[#taken + 1] = A(i)
  end
end
if #taken == 0 then return taken end
redis.call('PEXPIRE', ans, redis.call('PTTL', key))
if not TERMINAL[redis.call('HGET', key, 'status')] then
  if redis.call('HLEN', ir) == 0 then
    redis.call('HDEL', key, 'inputRequests')
    redis.call('HSET', key, 'status', '"working"')
  end
  redis.call('HSET', key, 'lastUpdatedAt', A(3))
end
redis.call('PUBLISH', P .. 'wake', A(2))
return taken
`),

  /** A(1) task key, then the keys: their answers (taken), 0 while some are missing, -1 when the task is gone. */
  mcpTakeTaskAnswers: script(`
local key = A(1)
if redis.call('EXISTS', key) == 0 then return -1 end
local ans = key .. ':ans'
local keys = {}
for i = 2, #ARGV - 3 do
  if redis.call('HEXISTS', ans, A(i)) == 0 then return 0 end
  keys[#keys + 1] = A(i)
end
local values = redis.call('HMGET', ans, unpack(keys))
redis.call('HDEL', ans, unpack(keys))
return values
`),

  /** A(1) id, A(2) ttl, A(3) most sessions: a new session; beyond the bound the least recently used goes. */
  mcpCreateSession: script(`
local now = nowms()
local index = P .. 'sess'
redis.call('ZREMRANGEBYSCORE', index, '-inf', now - tonumber(A(2)))
if redis.call('ZCARD', index) >= tonumber(A(3)) then
  redis.call('DEL', P .. 's:' .. redis.call('ZPOPMIN', index)[1])
end
redis.call('SET', P .. 's:' .. A(1), '1', 'PX', tonumber(A(2)))
redis.call('ZADD', index, stamp(now), A(1))
`),

  /** A(1) id, A(2) ttl: 1 (and its expiry pushed back) when the session is live. */
  mcpTouchSession: script(`
if redis.call('PEXPIRE', P .. 's:' .. A(1), tonumber(A(2))) == 1 then
  redis.call('ZADD', P .. 'sess', stamp(nowms()), A(1))
  return 1
end
redis.call('ZREM', P .. 'sess', A(1))
return 0
`),

  /**
   * A(1) record key, A(2) index member, A(3) digest, A(4) lease ms, A(5) most records: {'new'},
   * {'in_progress'}, {'done', response} or {'conflict'}.
   */
  mcpBeginIdempotent: script(`
local key = A(1)
local digest, state, response = unpack(redis.call('HMGET', key, 'd', 's', 'r'))
if digest then
  if digest ~= A(3) then return { 'conflict' } end
  if state == 'done' then return { 'done', response } end
  return { 'in_progress' }
end
local now = nowms()
local index = P .. 'idem'
redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
if redis.call('ZCARD', index) >= tonumber(A(5)) then
  redis.call('DEL', P .. 'i:' .. redis.call('ZPOPMIN', index)[1])
end
redis.call('HSET', key, 'd', A(3), 's', 'running')
redis.call('PEXPIRE', key, tonumber(A(4)))
redis.call('ZADD', index, now + tonumber(A(4)), A(2))
return { 'new' }
`),

  /** A(1) record key, A(2) index member, A(3) ms: extend a running claim; 1 when it still was one. */
  mcpRenewIdempotent: script(`
if redis.call('HGET', A(1), 's') ~= 'running' then return 0 end
redis.call('PEXPIRE', A(1), tonumber(A(3)))
redis.call('ZADD', P .. 'idem', nowms() + tonumber(A(3)), A(2))
return 1
`),

  /** A(1) record key, A(2) index member, A(3) response, A(4) retention ms: the outcome, kept for replays. */
  mcpFinishIdempotent: script(`
if not redis.call('HGET', A(1), 'd') then return 0 end
redis.call('HSET', A(1), 's', 'done', 'r', A(3))
redis.call('PEXPIRE', A(1), tonumber(A(4)))
redis.call('ZADD', P .. 'idem', nowms() + tonumber(A(4)), A(2))
return 1
`)
} as const

export type ScriptName = keyof typeof SCRIPTS
