/**
 * The Lua of {@link RedisWebhookStore}. Each script names its keys (KEYS) and every key of one call
 * shares a hash tag: `{who:<owner>}` for an owner's webhooks, `{wh:<id>}` for one webhook's
 * deliveries, `{wh}` for the schedule. So each script touches one slot, as Redis Cluster requires.
 */
export const WEBHOOK_SCRIPTS = {
  // KEYS: hooks. ARGV: id, json, max.
  whAdd: [1, `if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`],
  // KEYS: hooks. ARGV: id, ok (1/0), disableAfter, reason, now (ISO). Returns the webhook's JSON.
  whSettle: [1, `local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return false end
local h = cjson.decode(raw)
if ARGV[2] == '1' then
  if h.consecutiveFailures == 0 then return raw end
  h.consecutiveFailures = 0
else
  h.consecutiveFailures = h.consecutiveFailures + 1
  if h.status == 'active' and h.consecutiveFailures >= tonumber(ARGV[3]) then
    h.status = 'disabled'
    h.disabledReason = ARGV[4]
    h.disabledAt = ARGV[5]
  end
end
raw = cjson.encode(h)
redis.call('HSET', KEYS[1], ARGV[1], raw)
return raw`],
  // KEYS: due, msgs, bytes. ARGV: message id, json, dueAt, size, maxPending, maxBytes.
  whEnqueue: [3, `if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then return 0 end
if tonumber(redis.call('GET', KEYS[3]) or '0') + tonumber(ARGV[4]) > tonumber(ARGV[6]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('INCRBY', KEYS[3], ARGV[4])
return 1`],
  // KEYS: sched, gen. ARGV: webhook id, dueAt. The schedule says when a webhook next has work;
  // the generation tells a worker that work arrived while it looked.
  whSchedule: [2, `redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1`],
  // KEYS: sched, gen. ARGV: now, max. Returns webhook id, generation, ...
  whPoll: [2, `local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[2], id) or '0'
end
return out`],
  // KEYS: due, msgs, leases. ARGV: now, leaseUntil, max, lease prefix. Returns json, lease, ...,
  // then the earliest due time left (-1: none).
  whClaim: [3, `local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for i, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[2], id)
  if raw then
    local lease = ARGV[4] .. i
    redis.call('HSET', KEYS[3], id, lease)
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    out[#out + 1] = raw
    out[#out + 1] = lease
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
out[#out + 1] = first[2] or '-1'
return out`],
  // KEYS: sched, gen. ARGV: webhook id, generation seen, next due (-1: none). Only when nothing
  // arrived since the poll: otherwise the schedule already says so.
  whReschedule: [2, `if (redis.call('HGET', KEYS[2], ARGV[1]) or '0') ~= ARGV[2] then return 0 end
if ARGV[3] == '-1' then redis.call('ZREM', KEYS[1], ARGV[1]) else redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
return 1`],
  // KEYS: due, msgs, leases. ARGV: message id, lease, json, dueAt.
  whRetry: [3, `if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
return 1`],
  // KEYS: due, msgs, leases, bytes. ARGV: message id, lease, size.
  whFinish: [4, `if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('DECRBY', KEYS[4], ARGV[3]) <= 0 then redis.call('DEL', KEYS[4]) end
return 1`],
  // KEYS: due, msgs, leases, bytes. Returns every pending message.
  whDrain: [4, `local all = redis.call('HVALS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return all`]
} as const

export type WebhookScript = keyof typeof WEBHOOK_SCRIPTS
