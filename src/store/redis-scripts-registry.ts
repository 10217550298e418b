import { lua } from './redis-lua.js'

/**
 * Scripts on the registry slot (`P {g}:...`, one slot for the whole deployment): which connections
 * exist and in what order they were used, sessions, and the indexes that bound tasks and idempotency
 * records over all owners. Each is one small sorted-set step; the owners' own state is elsewhere.
 */
const registry = (body: string) =>
  lua(`
local G = P .. '{g}:'
-- A strictly increasing use stamp (ms, with sub-ms steps), so that least-recently-used order is exact.
local function stamp(now)
  local s = math.max(now, tonumber(redis.call('GET', G .. 'clock') or 0) + 0.001)
  redis.call('SET', G .. 'clock', string.format('%.3f', s))
  return s
end
${body}`)

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
  mcpLive: registry(`
local fresh = nowms() - CONN_TTL
if #ARGV == 4 then return redis.call('ZRANGE', K, '(' .. fresh, '+inf', 'BYSCORE') end
local out = {}
for i = 5, #ARGV do
  local at = redis.call('ZSCORE', K, ARGV[i])
  if at and tonumber(at) > fresh then out[#out + 1] = ARGV[i] end
end
return out
`),

  /** K sessions, A(1) id, A(2) ttl, A(3) most sessions: a new session; beyond the bound the least recently used goes. */
  mcpCreateSession: registry(`
local now = nowms()
redis.call('ZREMRANGEBYSCORE', K, '-inf', now - tonumber(A(2)))
if redis.call('ZCARD', K) >= tonumber(A(3)) then
  redis.call('DEL', G .. 's:' .. redis.call('ZPOPMIN', K)[1])
end
redis.call('SET', G .. 's:' .. A(1), '1', 'PX', tonumber(A(2)))
redis.call('ZADD', K, stamp(now), A(1))
`),

  /** K sessions, A(1) id, A(2) ttl: 1 (and its expiry pushed back) when the session is live. */
  mcpTouchSession: registry(`
if redis.call('PEXPIRE', G .. 's:' .. A(1), tonumber(A(2))) == 1 then
  redis.call('ZADD', K, stamp(nowms()), A(1))
  return 1
end
redis.call('ZREM', K, A(1))
return 0
`),

  /** K task index, A(1) member, A(2) ttl ms, A(3) most tasks: 1 reserved, -1 full (expired ones do not count). */
  mcpReserveTask: registry(`
local now = nowms()
redis.call('ZREMRANGEBYSCORE', K, '-inf', now)
if not redis.call('ZSCORE', K, A(1)) and redis.call('ZCARD', K) >= tonumber(A(3)) then return -1 end
redis.call('ZADD', K, now + tonumber(A(2)), A(1))
return 1
`),

  /**
   * K idempotency index, A(1) member, A(2) ms it lives from now, A(3) most records or 0 for an
   * update: the member of the record that expires first when one had to go (its key is for the
   * caller to delete), else nil.
   */
  mcpIndexIdempotent: registry(`
local now = nowms()
local evicted
if A(3) ~= '0' then
  redis.call('ZREMRANGEBYSCORE', K, '-inf', now)
  if not redis.call('ZSCORE', K, A(1)) and redis.call('ZCARD', K) >= tonumber(A(3)) then evicted = redis.call('ZPOPMIN', K)[1] end
end
redis.call('ZADD', K, now + tonumber(A(2)), A(1))
return evicted
`)
} as const
