import { Redis } from 'ioredis'
import { RedisStore } from '../../src/store/redis.js'
import { startRedis } from './procs.js'

/** Redis' CPU per store step by Redis Functions against scripts: the median of paired ratios. */
export interface FunctionsBench {
  launches: number
  steps: { step: string; functionsUs: number; scriptsUs: number; ratio: number; min: number; max: number }[]
}

const median = (a: readonly number[]) => {
  const s = [...a].sort((x, y) => x - y)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

async function redisCpu(admin: Redis): Promise<number> {
  const info = await admin.info('cpu')
  const field = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)![1])
  return field('used_cpu_user') + field('used_cpu_sys')
}

/**
 * For each launch a fresh redis-server (pinned like the bench's servers), and in alternating order a
 * store by functions and one by scripts (each its own prefix), each step run `count` times, 32 at a
 * time, after a warm-up: Redis' own CPU (INFO cpu) per step. The steps: an empty poll (mcpTake), a
 * push of a notification (mcpPush, with its wake-up), and a task creation (mcpCreateTask with the
 * ledger's bookkeeping), each owner new or one of 64.
 */
export async function functionsBench(count: number, launches: number): Promise<FunctionsBench> {
  const at = new Date().toISOString()
  const steps: Record<string, (s: RedisStore) => (i: number) => Promise<unknown>> = {
    'empty poll': (s) => (i) => s.mailbox.takeNotifications(`o${i % 64}`),
    push: (s) => (i) => s.mailbox.pushNotification(`p${i % 64}`, { method: 'notifications/message', params: { n: i } }),
    'task create': (s) => (i) =>
      s.tasks.createTask(`t${i}-${Math.random()}`, { taskId: `k${i}`, status: 'completed', createdAt: at, lastUpdatedAt: at, ttlMs: 60_000, pollIntervalMs: 1000, result: { content: [] } })
  }
  const got: Record<string, { functions: number[]; scripts: number[]; ratios: number[] }> = {}
  for (let launch = 0; launch < launches; launch++) {
    const redis = await startRedis()
    const admin = new Redis(redis.url)
    try {
      const order = launch % 2 === 0 ? (['auto', 'off'] as const) : (['off', 'auto'] as const)
      const one: Record<string, Record<string, number>> = {}
      for (const mode of order) {
        const store = new RedisStore({ url: redis.url, prefix: `fb${launch}${mode}:`, functions: mode })
        await store.ping()
        for (const [name, make] of Object.entries(steps)) {
          const step = make(store)
          const run = async (from: number, n: number) => {
            for (let i = from; i < from + n; i += 32) await Promise.all(Array.from({ length: 32 }, (_, j) => step(i + j)))
          }
          await run(0, Math.ceil(count / 8))
          const before = await redisCpu(admin)
          await run(count, count)
          ;(one[name] ??= {})[mode] = ((await redisCpu(admin)) - before) * 1e6 / count
        }
        await store.close()
      }
      for (const [name, m] of Object.entries(one)) {
        const g = (got[name] ??= { functions: [], scripts: [], ratios: [] })
        g.functions.push(m.auto!)
        g.scripts.push(m.off!)
        g.ratios.push(m.auto! / m.off!)
      }
    } finally {
      await admin.quit()
      await redis.stop()
    }
  }
  return {
    launches,
    steps: Object.entries(got).map(([step, g]) => ({ step, functionsUs: median(g.functions), scriptsUs: median(g.scripts), ratio: median(g.ratios), min: Math.min(...g.ratios), max: Math.max(...g.ratios) }))
  }
}

export function functionsTable(b: FunctionsBench): string {
  return [
    `| step | Redis CPU µs, functions | by scripts | functions / scripts (median of ${b.launches} paired launches, range) |`,
    '| --- | ---: | ---: | ---: |',
    ...b.steps.map((s) => `| ${s.step} | ${s.functionsUs.toFixed(2)} | ${s.scriptsUs.toFixed(2)} | ${s.ratio.toFixed(3)} (${s.min.toFixed(3)}-${s.max.toFixed(3)}) |`)
  ].join('\n')
}
