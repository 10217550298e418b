/**
 * What every script starts with (see `redis-scripts.ts`): the common arguments, Redis' clock, and
 * the names derived from `KEYS[1]`. Kept small: Redis runs it on every call.
 */
const PRELUDE = `
local P = ARGV[1]
local CONN_TTL = tonumber(ARGV[2])
local MAX_CONNS = tonumber(ARGV[3])
local PUB = ARGV[4]
local K = KEYS[1]
local function A(i) return ARGV[i + 4] end
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- The hash tag of K with its braces ("{h}" of "P c:{h}"): names built on it share K's slot.
local TAG = string.sub(K, #P + 3)
-- Wake whoever waits for \`name\` on the tag's shard channel, on any instance.
local function wake(name) redis.call(PUB, P .. 'w:' .. TAG, name) end
`

/** A script: the prelude, then `body`. */
export const lua = (body: string): string => PRELUDE + body

/**
 * A connection's keys other than its notification queue (which has its own TTL) live `CONN_TTL`
 * past its last use. For scripts whose K is a connection's hash `P c:{h}`.
 */
export const KEEPALIVE = `
local function keepalive()
  for _, k in ipairs({ K, K .. ':subs', K .. ':rq', K .. ':rm', K .. ':rs' }) do redis.call('PEXPIRE', k, CONN_TTL) end
end
`
