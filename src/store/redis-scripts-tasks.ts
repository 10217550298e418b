import { freesMemory, lua, readsOnly, type Definitions, type Lua } from './redis-lua.js'
import { PART } from './redis-keys.js'

/** What the task scripts share: TERMINAL, the terminal statuses as stored (JSON strings). */
const SHARED: Definitions = [['TERMINAL', 'local TERMINAL = { [\'"completed"\'] = true, [\'"failed"\'] = true, [\'"cancelled"\'] = true }']]

const script = (body: string): Lua => lua(body, SHARED)

/**
 * Scripts on one task's slot (K is its hash `P t:{h:<taskId>}`, with `:in` its outstanding input
 * requests and `:ans` their answers) and on one idempotency record's (K is `P i:{h:<requestId>}`).
 * The indexes that bound them over all owners are in `redis-scripts-registry.ts`.
 */
export const TASK_SCRIPTS = {
  /**
   * K task, A(1) ttl ms, A(2) 1 when inputRequests is set, A(3) number of field/value pairs, then
   * the pairs, then the inputRequests pairs. The task id is new (127 random bits): nothing to clear.
   */
  mcpCreateTask: script(`
local ttl, n = tonumber(A(1)), tonumber(A(3))
if A(2) == '1' then
  redis.call('HSET', K, 'inputRequests', '1', unpack(ARGV, 4, 3 + 2 * n))
  if #ARGV > 3 + 2 * n then redis.call('HSET', K .. '${PART.inputRequests}', unpack(ARGV, 4 + 2 * n)) end
  redis.call('PEXPIRE', K .. '${PART.inputRequests}', ttl)
elseif n > 0 then
  redis.call('HSET', K, unpack(ARGV, 4, 3 + 2 * n))
end
redis.call('PEXPIRE', K, ttl)
`),

  /**
   * K task: {fields, inputRequests} or nil. The outstanding requests are read only when the field
   * inputRequests says there are some (what the store decodes them by): most polls skip a command.
   */
  mcpGetTask: readsOnly(script(`
local fields = redis.call('HGETALL', K)
if #fields == 0 then return nil end
for i = 1, #fields, 2 do
  if fields[i] == 'inputRequests' then return { fields, redis.call('HGETALL', K .. '${PART.inputRequests}') } end
end
return { fields, {} }
`)),

  /**
   * K task, A(1) lastUpdatedAt JSON, A(2) 'keep' | 'set' | 'del' for inputRequests, A(3) number of
   * fields to set, the pairs, the number of fields to delete, their names, then the inputRequests
   * pairs: nil when unknown or terminal, else the task as {fields, inputRequests} when its creator
   * asked for notifications (the notification carries it; read with the status, as it was created),
   * else 1.
   */
  mcpUpdateTask: script(`
local was = redis.call('HMGET', K, 'status', 'notify')
if not was[1] or TERMINAL[was[1]] then return nil end
local n = tonumber(A(3))
local d = 4 + 2 * n
local dels = tonumber(A(d))
local ir = K .. '${PART.inputRequests}'
if dels > 0 then redis.call('HDEL', K, unpack(ARGV, d + 1, d + dels)) end
if A(2) ~= 'keep' then redis.call('DEL', ir) redis.call('HDEL', K, 'inputRequests') end
if A(2) == 'set' then
  redis.call('HSET', K, 'inputRequests', '1')
  if #ARGV > d + dels then redis.call('HSET', ir, unpack(ARGV, d + 1 + dels)) end
  redis.call('PEXPIRE', ir, redis.call('PTTL', K))
end
redis.call('HSET', K, 'lastUpdatedAt', A(1), unpack(ARGV, 4, 3 + 2 * n))
if was[2] ~= 'true' then return 1 end
if TERMINAL[redis.call('HGET', K, 'status')] then redis.call('HSET', K, 'notifyPending', 'true') end
return { redis.call('HGETALL', K), redis.call('HGETALL', ir) }
`),

  /**
   * K task, A(1) lastUpdatedAt JSON, then key/answer pairs: the keys taken (outstanding ones only),
   * or nil when the task is unknown. Wakes the task's runner (waiting on the name K).
   */
  mcpAnswerTask: script(`
if redis.call('EXISTS', K) == 0 then return nil end
local ir, ans = K .. '${PART.inputRequests}', K .. '${PART.answers}'
local taken = {}
for i = 2, #ARGV, 2 do
  if redis.call('HDEL', ir, A(i)) == 1 then
    redis.call('HSET', ans, A(i), A(i + 1))
    taken[#taken + 1] = A(i)
  end
end
if #taken == 0 then return taken end
redis.call('PEXPIRE', ans, redis.call('PTTL', K))
if not TERMINAL[redis.call('HGET', K, 'status')] then
  if redis.call('HLEN', ir) == 0 then
    redis.call('HDEL', K, 'inputRequests')
    redis.call('HSET', K, 'status', '"working"')
  end
  redis.call('HSET', K, 'lastUpdatedAt', A(1))
end
wake(K)
return taken
`),

  /**
   * K task, A(1) lease (JSON): extend the lease of a task that runs or whose end's notification is
   * pending, lastUpdatedAt untouched; 1 when it did.
   */
  mcpRenewTask: script(`
local status = redis.call('HGET', K, 'status')
if not status or (TERMINAL[status] and not redis.call('HGET', K, 'notifyPending')) then return 0 end
redis.call('HSET', K, 'leaseUntil', A(1))
return 1
`),

  /**
   * K task, A(1) now, A(2) the taker's lease (JSON): 0 when the task is gone or its lease guards
   * nothing (no lease; ended and notified); its lease when not lapsed; else the lease is the
   * taker's and the task is returned as {fields, inputRequests}.
   */
  mcpTakeLapsedTask: script(`
local status = redis.call('HGET', K, 'status')
if not status then return 0 end
local lease = redis.call('HGET', K, 'leaseUntil')
if not lease or (TERMINAL[status] and not redis.call('HGET', K, 'notifyPending')) then return 0 end
if tonumber(lease) >= tonumber(A(1)) then return tonumber(lease) end
redis.call('HSET', K, 'leaseUntil', A(2))
return { redis.call('HGETALL', K), redis.call('HGETALL', K .. '${PART.inputRequests}') }
`),

  /** K task, then the keys: their answers (taken), 0 while some are missing, -1 when the task is gone. */
  mcpTakeTaskAnswers: script(`
if redis.call('EXISTS', K) == 0 then return -1 end
local ans = K .. '${PART.answers}'
local keys = {}
for i = 1, #ARGV do
  if redis.call('HEXISTS', ans, A(i)) == 0 then return 0 end
  keys[#keys + 1] = A(i)
end
local values = redis.call('HMGET', ans, unpack(keys))
redis.call('HDEL', ans, unpack(keys))
return values
`),

  /** K record, A(1) digest, A(2) lease ms: {'new'} (claimed), {'in_progress'}, {'done', response} or {'conflict'}. */
  mcpBeginIdempotent: script(`
local digest, state, response = unpack(redis.call('HMGET', K, 'd', 's', 'r'))
if digest then
  if digest ~= A(1) then return { 'conflict' } end
  if state == 'done' then return { 'done', response } end
  return { 'in_progress' }
end
redis.call('HSET', K, 'd', A(1), 's', 'running')
redis.call('PEXPIRE', K, tonumber(A(2)))
return { 'new' }
`),

  /** K any key: delete it (through the scripts, so that a store outage fails the same way everywhere). */
  mcpDel: freesMemory(script('redis.call("DEL", K)')),

  /** K record, A(1) ms: extend a running claim; 1 when it still was one. */
  mcpRenewIdempotent: script(`
if redis.call('HGET', K, 's') ~= 'running' then return 0 end
redis.call('PEXPIRE', K, tonumber(A(1)))
return 1
`),

  /** K record, A(1) response, A(2) retention ms: the outcome, kept for replays; 1 when there was a claim. */
  mcpFinishIdempotent: script(`
if not redis.call('HGET', K, 'd') then return 0 end
redis.call('HSET', K, 's', 'done', 'r', A(1))
redis.call('PEXPIRE', K, tonumber(A(2)))
return 1
`)
} as const
