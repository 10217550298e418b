import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { DEFAULT_LIMITS, RECORD_OVERHEAD } from '../../src/store/limits.js'
import { TOO_LARGE } from '../../src/store/memory-tasks.js'
import { COMMAND_OPTIONS, batchTurns } from '../../src/store/redis-connect.js'
import { TASK_FLOOR } from '../../src/store/redis-tasks.js'
import { INSTANCE_LOST } from '../../src/tasks/task-steps.js'

/**
 * The ceiling of the Redis paths, for bare Fastify in the Redis phases: ioredis (each turn's commands
 * in one write, as the library's store sends them) doing the fewest round trips that the library's
 * guarantees need, on the same keys (so that it would run on a Redis Cluster too: one script per
 * slot) with the same atomicity.
 * Each script is loaded once (defineCommand: EVALSHA) and is as small as its guarantee allows:
 *
 * - GET /notifications, one script on the connection's slot: a group handed out stays the same until
 *   acknowledged (so reading it and cutting a new one from the queue must be one atomic step), and
 *   notifications older than their TTL are dropped (so each item carries its time). Nothing queued
 *   costs one HGET and one LINDEX inside it. The group comes back as its id and the JSON array of
 *   the notifications (as they were queued, never decoded), which is sent as it is.
 * - task creation, one round trip of two scripts: the task counts against the bounds of issue 15
 *   (running tasks in all and per owner, bytes of tasks in all and per owner, each record counted
 *   until it expires, and a refusal that says when space frees) in a ledger on the registry's slot,
 *   and is written atomically with its TTL on its own slot. Two slots need two scripts; they leave
 *   in the same write, and a refused reservation deletes the task written beside it (nobody knows
 *   its id yet). The ledger: a sorted set of records by expiry (what expired is dropped in batches,
 *   at most every 100 ms or at once when a bound would refuse, its bytes and running counts leaving
 *   the totals per owner at once), each owner's
 *   records and running ones in sorted sets (the refusal's Retry-After is the first to expire, a
 *   time when space is certain to free), the running ones in all in a sorted set too, and the
 *   totals in one hash read and written once. A task counts at least TASK_FLOOR bytes, as the
 *   library's do, so a small outcome cannot be refused and its count needs no verdict first.
 * - the background completion: the ledger's finish (the task leaves the running ones, its outcome's
 *   bytes replace its own) and one script on the task's slot, since a terminal task must stay
 *   terminal (a check and a write, atomic), in the same write.
 * - task poll: one script reading the task's hash and its outstanding input requests together.
 * - a task's lease: a task whose instance died must not stay `working` until its TTL. Each task is
 *   written with a lease (`leaseUntil`), renewed while it runs by one timer for all of them; a poll
 *   that finds it lapsed fails the task, as the library's does (INSTANCE_LOST).
 * - every command as the library's store sends it (COMMAND_OPTIONS, batchTurns): failing after 2
 *   retries and a timeout, so that a Redis that hangs is a fast error rather than a request held
 *   forever, and the commands of one turn of the event loop in one write.
 *
 * The library runs as many Redis commands per task on the same guarantees (18, `INFO commandstats`
 * over 4,000 tasks; 24 until 2026-11-29, when it counted running tasks with ZCARD rather than with
 * counters kept beside the bytes and read a finished task's record twice).
 */
export interface RedisCeiling {
  take(): Promise<{ id: string; json: string } | undefined>
  createTask(task: Record<string, string | number>): Promise<boolean>
  completeTask(taskId: string, patch: Record<string, unknown>): Promise<void>
  getTask(taskId: string): Promise<Record<string, unknown> | undefined>
  close(): Promise<void>
}

const TAKE = `
local g = redis.call('HGET', KEYS[1], 'group')
if g then return g end
local q = KEYS[1] .. ':nq'
local head = redis.call('LINDEX', q, 0)
if not head then return nil end
local t = redis.call('TIME')
local fresh = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[3])
while head and tonumber(string.match(head, '^(%d+) ')) < fresh do
  redis.call('LPOP', q)
  head = redis.call('LINDEX', q, 0)
end
local items = redis.call('LRANGE', q, 0, tonumber(ARGV[2]) - 1)
if #items == 0 then return nil end
redis.call('LTRIM', q, #items, -1)
for i, item in ipairs(items) do items[i] = string.sub(item, string.find(item, ' ', 1, true) + 1) end
g = ARGV[1] .. '\\n[' .. table.concat(items, ',') .. ']'
redis.call('HSET', KEYS[1], 'group', g)
return g
`
// KEYS[1] the ledger; ARGV member (<owner>:<id>), ttl ms, bytes, most running, most running per
// owner, most bytes, most bytes per owner, owner. 1, or {why, ms until space frees}.
const RESERVE = `
local Z, B, U = KEYS[1], KEYS[1] .. ':b', KEYS[1] .. ':u'
local m, b, oh = ARGV[1], tonumber(ARGV[3]), ARGV[8]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Drop what expired, in batches: its bytes and running counts leave the totals, per owner at once.
local function sweep()
  redis.call('HSET', U, '~', now)
  local gone
  repeat
    gone = redis.call('ZRANGE', Z, '-inf', now, 'BYSCORE', 'LIMIT', 0, 500)
    if #gone == 0 then return end
    local rec = redis.call('HMGET', B, unpack(gone))
    local per, tb, tr, running = {}, 0, 0, {}
    for i, g in ipairs(gone) do
      local gb, gr = string.match(rec[i] or '0 0', '^(%d+) (%d)')
      local go = string.match(g, '^([^:]+):')
      local o = per[go]
      if not o then o = { {}, {}, 0 } per[go] = o end
      o[1][#o[1] + 1] = g
      o[3] = o[3] + tonumber(gb)
      tb = tb + tonumber(gb)
      if gr == '1' then o[2][#o[2] + 1] = g running[#running + 1] = g end
    end
    redis.call('HDEL', B, unpack(gone))
    redis.call('ZREM', Z, unpack(gone))
    if #running > 0 then redis.call('ZREM', Z .. ':r', unpack(running)) end
    for go, o in pairs(per) do
      redis.call('ZREM', Z .. ':o:' .. go, unpack(o[1]))
      redis.call('HINCRBY', U, go, -o[3])
      if #o[2] > 0 then
        redis.call('ZREM', Z .. ':r:' .. go, unpack(o[2]))
        redis.call('HINCRBY', U, go .. 'r', -#o[2])
      end
    end
    redis.call('HINCRBY', U, '*', -tb)
    if #running > 0 then redis.call('HINCRBY', U, '*r', -#running) end
  until #gone < 500
end
local function first(z)
  local f = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
  return #f == 0 and 1000 or math.max(1, math.ceil(tonumber(f[2]) - now))
end
local u
local function refusal()
  if tonumber(u[2] or 0) >= tonumber(ARGV[5]) then return { 'quota', first(Z .. ':r:' .. oh) } end
  if tonumber(u[1] or 0) + b > tonumber(ARGV[7]) then return { 'quota', first(Z .. ':o:' .. oh) } end
  if tonumber(u[4] or 0) >= tonumber(ARGV[4]) then return { 'running', first(Z .. ':r') } end
  if tonumber(u[3] or 0) + b > tonumber(ARGV[6]) then return { 'full', first(Z) } end
end
u = redis.call('HMGET', U, oh, oh .. 'r', '*', '*r', '~')
-- A sweep at most every 100 ms, or at once when a bound would refuse (bounds count only the living).
local swept = now - tonumber(u[5] or 0) >= 100
if swept then
  sweep()
  u = redis.call('HMGET', U, oh, oh .. 'r', '*', '*r')
end
local refused = refusal()
if refused and not swept then
  sweep()
  u = redis.call('HMGET', U, oh, oh .. 'r', '*', '*r')
  refused = refusal()
end
if refused then return refused end
local at = now + tonumber(ARGV[2])
redis.call('ZADD', Z, at, m)
redis.call('ZADD', Z .. ':r', at, m)
redis.call('ZADD', Z .. ':o:' .. oh, at, m)
redis.call('ZADD', Z .. ':r:' .. oh, at, m)
redis.call('HSET', B, m, b .. ' 1')
redis.call('HSET', U, oh, tonumber(u[1] or 0) + b, oh .. 'r', tonumber(u[2] or 0) + 1, '*', tonumber(u[3] or 0) + b, '*r', tonumber(u[4] or 0) + 1)
return 1
`
// KEYS[1] the ledger; ARGV member, the outcome's bytes, most bytes, most bytes per owner, owner.
// 1 (counted; also for a record already gone), or 0: the outcome does not fit.
const FINISH = `
local Z, B, U = KEYS[1], KEYS[1] .. ':b', KEYS[1] .. ':u'
local m, b, oh = ARGV[1], tonumber(ARGV[2]), ARGV[5]
local rec = redis.call('HGET', B, m)
if not rec then return 1 end
local old, running = string.match(rec, '^(%d+) (%d)')
old = tonumber(old)
local u = redis.call('HMGET', U, oh, oh .. 'r', '*', '*r')
local ob, orun, tb, trun = tonumber(u[1] or 0), tonumber(u[2] or 0), tonumber(u[3] or 0), tonumber(u[4] or 0)
if ob - old + b > tonumber(ARGV[4]) or tb - old + b > tonumber(ARGV[3]) then return 0 end
redis.call('HSET', B, m, b .. ' 0')
if running == '1' then
  redis.call('ZREM', Z .. ':r', m)
  redis.call('ZREM', Z .. ':r:' .. oh, m)
  orun, trun = orun - 1, trun - 1
end
redis.call('HSET', U, oh, ob - old + b, oh .. 'r', orun, '*', tb - old + b, '*r', trun)
return 1
`
const CREATE = `
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
`
const COMPLETE = `
local s = redis.call('HGET', KEYS[1], 'status')
if not s or s == '"completed"' or s == '"failed"' or s == '"cancelled"' then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
`
const RENEW = `
if redis.call('HGET', KEYS[1], 'status') == '"working"' then redis.call('HSET', KEYS[1], 'leaseUntil', ARGV[1]) end
`
const GET = `
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return nil end
return { fields, redis.call('HGETALL', KEYS[1] .. ':in') }
`
/** The scripts by name, for the bench's round-trip table. */
export const CEILING_SCRIPTS = { ceilingTake: TAKE, ceilingReserve: RESERVE, ceilingFinish: FINISH, ceilingCreate: CREATE, ceilingComplete: COMPLETE, ceilingRenew: RENEW, ceilingGet: GET }

// The library's defaults but for the bound on tasks, raised as the bench's own server raises it
// (bench/servers/ours.ts); bytes counted as the library counts them (RECORD_OVERHEAD, TASK_FLOOR).
const LIMITS = {
  running: 100_000,
  runningPerOwner: DEFAULT_LIMITS.maxTasksPerPrincipal,
  bytes: DEFAULT_LIMITS.maxTaskBytes,
  bytesPerOwner: DEFAULT_LIMITS.maxTaskBytesPerPrincipal
}

type Script = (key: string, ...args: (string | number)[]) => Promise<unknown>

/** `leaseMs`: the tasks' lease, as the library's `MCP_TASK_LEASE_MS` (60 s by default). */
export async function redisCeiling(url: string, queued: unknown[], leaseMs = 60_000): Promise<RedisCeiling> {
  const redis = batchTurns(new Redis(url, { ...COMMAND_OPTIONS }))
  for (const [name, lua] of Object.entries(CEILING_SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 1, lua })
  const run = redis as unknown as Record<keyof typeof CEILING_SCRIPTS, Script>
  const P = `bare-${process.pid}:`
  const h = createHash('sha1').update('anonymous').digest('hex')
  const conn = `${P}c:{${h}}`
  const index = `${P}{g}:tasks`
  const taskKey = (id: string) => `${P}t:{${h}:${id}}`
  const now = Date.now()
  if (queued.length > 0) {
    await redis.rpush(`${conn}:nq`, ...queued.map((n) => `${now} ${JSON.stringify(n)}`))
    await redis.pexpire(`${conn}:nq`, 3_600_000)
  }
  let groups = 0
  // The running tasks' leases, renewed by one timer (a lost renewal is tried at the next tick).
  const running = new Set<string>()
  const renewing = setInterval(() => {
    const until = String(Date.now() + leaseMs)
    for (const id of running) run.ceilingRenew(taskKey(id), until).catch(() => undefined)
  }, leaseMs / 3).unref()
  const ceiling: RedisCeiling = {
    async take() {
      const g = (await run.ceilingTake(conn, `g-${++groups}`, 100, 3_600_000)) as string | null
      if (g === null) return undefined
      const nl = g.indexOf('\n')
      return { id: g.slice(0, nl), json: g.slice(nl + 1) }
    },
    async createTask(task) {
      const key = taskKey(String(task.taskId))
      const fields = Object.entries(task).flatMap(([k, v]) => [k, JSON.stringify(v)])
      fields.push('leaseUntil', String(Date.now() + leaseMs))
      const bytes = Math.max(RECORD_OVERHEAD + JSON.stringify(fields).length, TASK_FLOOR)
      const [reserved] = await Promise.all([
        run.ceilingReserve(index, `${h}:${task.taskId}`, task.ttlMs!, bytes, LIMITS.running, LIMITS.runningPerOwner, LIMITS.bytes, LIMITS.bytesPerOwner, h),
        run.ceilingCreate(key, task.ttlMs!, ...fields)
      ])
      if (reserved === 1) {
        running.add(String(task.taskId))
        return true
      }
      await redis.del(key)
      return false
    },
    async completeTask(taskId, patch) {
      running.delete(taskId)
      let fields = Object.entries(patch).flatMap(([k, v]) => [k, JSON.stringify(v)])
      const bytes = RECORD_OVERHEAD + JSON.stringify(fields).length
      const counted = run.ceilingFinish(index, `${h}:${taskId}`, bytes, LIMITS.bytes, LIMITS.bytesPerOwner, h)
      // No larger than the task already counts, the ledger cannot refuse it: both in one write.
      if (bytes > TASK_FLOOR && (await counted) === 0) {
        fields = ['status', '"failed"', 'error', JSON.stringify(TOO_LARGE)]
      }
      await Promise.all([run.ceilingComplete(taskKey(taskId), ...fields), counted])
    },
    async getTask(taskId) {
      const found = (await run.ceilingGet(taskKey(taskId))) as [string[], string[]] | null
      if (found === null) return undefined
      const [fields] = found
      const task: Record<string, unknown> = {}
      let lease = Number.POSITIVE_INFINITY
      for (let i = 0; i < fields.length; i += 2) {
        if (fields[i] === 'leaseUntil') lease = Number(fields[i + 1])
        else task[fields[i]!] = JSON.parse(fields[i + 1]!)
      }
      if (task.status !== 'working' || lease >= Date.now()) return task
      // Its instance died: the task fails, saying why, as the library's lapsed tasks do.
      await ceiling.completeTask(taskId, { status: 'failed', lastUpdatedAt: new Date().toISOString(), statusMessage: INSTANCE_LOST.message, error: { ...INSTANCE_LOST } })
      return ceiling.getTask(taskId)
    },
    async close() {
      clearInterval(renewing)
      await redis.quit()
    }
  }
  return ceiling
}
