import { LATER, freesMemory, lua, type Definitions, type Lua } from './redis-lua.js'
import { KIND, PART } from './redis-keys.js'

/**
 * What the scripts on a connection's slot share (each takes only what it names, see {@link lua}):
 * - `answerKey(id)`, the key of the answer to request `id` (on the connection's slot);
 * - the notification queue `q` and its byte count `qb`; `pop()` drops the oldest and answers the bytes left;
 * - the request queue (`rq` order, `rm` messages, `rs` states); `withdraw(id)` takes one off, false when absent.
 */
const SHARED: Definitions = [
  ['answerKey', `local function answerKey(id) return P .. '${KIND.answer}' .. TAG .. ':' .. id end`],
  ['q|qb', `local q, qb = K .. '${PART.notifications}', K .. '${PART.notificationBytes}'`],
  [
    'pop',
    `local function pop()
  local item = redis.call('LPOP', q)
  if not item then redis.call('DEL', qb) return 0 end
  return redis.call('DECRBY', qb, #item)
end`
  ],
  ['rq|rm|rs', `local rq, rm, rs = K .. '${PART.requestOrder}', K .. '${PART.requestMessages}', K .. '${PART.requestStates}'`],
  [
    'withdraw',
    `local function withdraw(id)
  local size = redis.call('HSTRLEN', rm, id)
  if redis.call('HDEL', rm, id) == 0 then return false end
  redis.call('HINCRBY', K, 'rqb', -size)
  redis.call('HDEL', rs, id)
  redis.call('LREM', rq, 1, id)
  return true
end`
  ]
]

const script = (body: string): Lua => lua(body, SHARED)

/**
 * Scripts on one logical connection's slot (K is its hash `P c:{h}`): its notification queue and
 * groups, and its server-to-client requests (active, pending, complete) with their answers.
 */
export const MAILBOX_SCRIPTS = {
  /**
   * K connection, A(1) JSON, A(2) max queued, A(3) notification TTL, A(4) 1 when it is a use of the
   * connection (0 for a broadcast), A(5) max bytes queued. Stored as "<ms> <json>": never decoded
   * here, so it comes back verbatim; `:nqb` counts the queue's bytes (and expires with it).
   */
  mcpPush: script(`
local now = nowms()
local item = now .. ' ' .. A(1)
redis.call('RPUSH', q, item)
local n = redis.call('INCRBY', qb, #item)
while redis.call('LLEN', q) > tonumber(A(2)) or n > tonumber(A(5)) do n = pop() end
redis.call('PEXPIRE', q, tonumber(A(3)))
redis.call('PEXPIRE', qb, tonumber(A(3)))
if A(4) == '1' then keepalive() end
`),

  /** K connection, A(1) id for a new group, A(2) batch size, A(3) notification TTL: the group's JSON or nil. */
  mcpTake: script(`
local g = redis.call('HGET', K, 'group')
if g then return g end
-- Nothing queued (the usual poll): two commands, and none of the definitions below made (so the
-- queue is named here as the shared q names it).
local head = redis.call('LINDEX', K .. '${PART.notifications}', 0)
if not head then return nil end
${LATER}
local fresh = nowms() - tonumber(A(3))
while head and tonumber(string.match(head, '^(%d+) ')) < fresh do
  pop()
  head = redis.call('LINDEX', q, 0)
end
local items = redis.call('LRANGE', q, 0, tonumber(A(2)) - 1)
if #items == 0 then return nil end
redis.call('LTRIM', q, #items, -1)
local parts, taken = {}, 0
for i, item in ipairs(items) do
  parts[i] = string.sub(item, string.find(item, ' ', 1, true) + 1)
  taken = taken + #item
end
redis.call('DECRBY', qb, taken)
g = '{"id":' .. cjson.encode(A(1)) .. ',"notifications":[' .. table.concat(parts, ',') .. ']}'
redis.call('HSET', K, 'group', g, 'gid', A(1))
redis.call('PEXPIRE', K, CONN_TTL)
return g
`),

  /** K connection, A(1) group id: 1 when it was the current group (or the one acknowledged last). */
  mcpAck: freesMemory(
    script(`
if redis.call('HGET', K, 'gid') == A(1) then
  redis.call('HDEL', K, 'group', 'gid')
  redis.call('HSET', K, 'acked', A(1))
  return 1
end
if redis.call('HGET', K, 'acked') == A(1) then return 1 end
return 0
`)
  ),

  /**
   * K connection, A(1) id, A(2) request JSON, A(3) max requests, A(4) 1 to discard the oldest active
   * one when full, A(5) answer TTL, A(6) the discarded one's answer, A(7) max bytes: 'OK', or
   * 'FULL' (by count) or 'FULLB' (by bytes: field `rqb` of K counts the queue's bytes).
   */
  mcpEnqueue: script(`
local now = nowms()
local size, maxb = #A(2), tonumber(A(7))
if size > maxb then return 'FULLB' end
while redis.call('LLEN', rq) >= tonumber(A(3)) or tonumber(redis.call('HGET', K, 'rqb') or 0) + size > maxb do
  local full = redis.call('LLEN', rq) >= tonumber(A(3)) and 'FULL' or 'FULLB'
  if A(4) ~= '1' then return full end
  local victim
  for _, id in ipairs(redis.call('LRANGE', rq, 0, -1)) do
    if string.match(redis.call('HGET', rs, id) or '', '^%d+ %-') then victim = id break end
  end
  if not victim then return full end
  withdraw(victim)
  redis.call('SET', answerKey(victim), A(6), 'PX', tonumber(A(5)))
  wake(answerKey(victim))
end
redis.call('RPUSH', rq, A(1))
redis.call('HSET', rm, A(1), A(2))
redis.call('HINCRBY', K, 'rqb', size)
redis.call('HSET', rs, A(1), now .. ' - 0')
keepalive()
return 'OK'
`),

  /** K connection, A(1) redelivery ms: {id, JSON, createdAt, deliveredAt, deliveries} of the oldest active one, or nil. */
  mcpClaim: script(`
local now = nowms()
for _, id in ipairs(redis.call('LRANGE', rq, 0, -1)) do
  local created, delivered, n = string.match(redis.call('HGET', rs, id) or '', '^(%d+) (%S+) (%d+)$')
  if created and (delivered == '-' or now - tonumber(delivered) >= tonumber(A(1))) then
    n = tonumber(n) + 1
    redis.call('HSET', rs, id, created .. ' ' .. now .. ' ' .. n)
    return { id, redis.call('HGET', rm, id), created, tostring(now), tostring(n) }
  end
end
return nil
`),

  /** K connection, A(1) id, A(2) answer JSON, A(3) answer TTL: 1 once, 0 when unknown or already complete. */
  mcpComplete: script(`
if not withdraw(A(1)) then return 0 end
redis.call('SET', answerKey(A(1)), A(2), 'PX', tonumber(A(3)))
wake(answerKey(A(1)))
return 1
`),

  /** K connection, A(1) id: withdraw a request nobody waits for any more (and a late answer). */
  mcpWithdraw: freesMemory(
    script(`
withdraw(A(1))
redis.call('DEL', answerKey(A(1)))
`)
  )
} as const
