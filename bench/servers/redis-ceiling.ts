import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'

/**
 * The ceiling of the Redis paths, for bare Fastify in the Redis phases: ioredis (auto-pipelining, as
 * the library's store) doing the fewest round trips that the library's guarantees need, on the same
 * keys (so that it would run on a Redis Cluster too: one script per slot) with the same atomicity.
 * Each script is loaded once (defineCommand: EVALSHA) and is as small as its guarantee allows:
 *
 * - GET /notifications, one script on the connection's slot: a group handed out stays the same until
 *   acknowledged (so reading it and cutting a new one from the queue must be one atomic step), and
 *   notifications older than their TTL are dropped (so each item carries its time). Nothing queued
 *   costs one HGET and one LINDEX inside it. The group comes back as its id and the JSON array of
 *   the notifications (as they were queued, never decoded), which is sent as it is.
 * - task creation, one round trip of two scripts: the task counts against a bound over all owners
 *   (an index on the registry's slot) and is written atomically with its TTL (on the task's slot).
 *   Two slots need two scripts; they leave in the same write, and a refused reservation deletes the
 *   task written beside it (nobody knows its id yet). Then the background completion: one script,
 *   since a terminal task must stay terminal (a check and a write, atomic).
 * - task poll: one script reading the task's hash and its outstanding input requests together.
 *
 * Not kept yet: the ledgers of issue 15 (bytes of tasks in all and per owner, running tasks per
 * owner, a finished outcome that does not fit replaced by a failure). This ceiling bounds tasks by
 * count only, so a task here costs Redis 5 commands where the library's cost 25;
 * the task-create ratio against it is of a lighter workload than the library's guarantees need.
 */
export interface RedisCeiling {
  take(): Promise<{ id: string; json: string } | undefined>
  createTask(task: Record<string, string | number>): Promise<boolean>
  completeTask(taskId: string, patch: Record<string, unknown>): Promise<void>
  getTask(taskId: string): Promise<Record<string, unknown> | undefined>
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
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return -1 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
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
const GET = `
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return nil end
return { fields, redis.call('HGETALL', KEYS[1] .. ':in') }
`
/** The scripts by name, for the bench's round-trip table. */
export const CEILING_SCRIPTS = { ceilingTake: TAKE, ceilingReserve: RESERVE, ceilingCreate: CREATE, ceilingComplete: COMPLETE, ceilingGet: GET }

type Script = (key: string, ...args: (string | number)[]) => Promise<unknown>

export async function redisCeiling(url: string, queued: unknown[]): Promise<RedisCeiling> {
  const redis = new Redis(url, { enableAutoPipelining: true })
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
  return {
    async take() {
      const g = (await run.ceilingTake(conn, `g-${++groups}`, 100, 3_600_000)) as string | null
      if (g === null) return undefined
      const nl = g.indexOf('\n')
      return { id: g.slice(0, nl), json: g.slice(nl + 1) }
    },
    async createTask(task) {
      const key = taskKey(String(task.taskId))
      const fields = Object.entries(task).flatMap(([k, v]) => [k, JSON.stringify(v)])
      const [reserved] = await Promise.all([run.ceilingReserve(index, `${h}:${task.taskId}`, task.ttlMs!, 100_000), run.ceilingCreate(key, task.ttlMs!, ...fields)])
      if (reserved === 1) return true
      await redis.del(key)
      return false
    },
    async completeTask(taskId, patch) {
      await run.ceilingComplete(taskKey(taskId), ...Object.entries(patch).flatMap(([k, v]) => [k, JSON.stringify(v)]))
    },
    async getTask(taskId) {
      const found = (await run.ceilingGet(taskKey(taskId))) as [string[], string[]] | null
      if (found === null) return undefined
      const [fields] = found
      const task: Record<string, unknown> = {}
      for (let i = 0; i < fields.length; i += 2) task[fields[i]!] = JSON.parse(fields[i + 1]!)
      return task
    }
  }
}
