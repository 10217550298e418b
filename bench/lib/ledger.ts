import { Redis } from 'ioredis'
import { RedisStore, type RedisStoreOptions } from '../../src/store/redis.js'
import { cpuSeconds, startRedis } from './procs.js'
import { cli, startRedisCluster } from '../../test/helpers/redis-cluster.js'

/** Task creation's Redis CPU per master (bench/lib/ledger.ts). */
export interface LedgerSpread {
  redis: string
  launches: number
  tasks: number
  rows: {
    setting: string
    shards: number
    /** Each master's CPU per task (create and finish), µs, busiest first: the median over launches. */
    usPerTask: number[]
    /** Each master's share of the scripts run (INFO commandstats), busiest first. */
    scripts: number[]
    /** Tasks a second the busiest master feeds (one core each): 1e6 / its µs. */
    perSecond: number
  }[]
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * Task creation with the Redis store (create, then finish with a small result: the bench's task
 * workload) straight through `RedisStore`, from 1,000 owners with 256 tasks in flight, on one
 * redis-server and on a Redis Cluster of 3 masters (and 3 replicas) with one ledger and with the
 * ledger in shards. Per master: its process's CPU time (commands, network and replication) per task,
 * and its share of the scripts. Redis runs commands on one thread, so the busiest master bounds
 * what the deployment feeds: 1e6 / its µs per task, if each master has a core of its own. This
 * machine's 2 cores are shared by every node and the bench, so the CPU per task, not the rate
 * measured here, is the result. Each launch starts fresh Redis processes; medians over launches.
 */
export async function ledgerSpread(tasks = 20_000, launches = 3): Promise<LedgerSpread> {
  const settings: [string, 'one' | 'cluster', Partial<RedisStoreOptions>][] = [
    ['one Redis (one ledger)', 'one', {}],
    ['Cluster of 3 masters, one ledger', 'cluster', { ledgerShards: 1 }],
    ['Cluster of 3 masters, ledger in shards (default)', 'cluster', {}]
  ]
  const runs = new Map<string, { shards: number; us: number[][]; scripts: number[][] }>()
  let version = 'unknown'
  for (let launch = 0; launch < launches; launch++) {
    for (const [setting, form, options] of settings) {
      const run = form === 'one' ? await onOne(tasks, options) : await onCluster(tasks, options)
      version = run.version
      const r = runs.get(setting) ?? { shards: run.shards, us: [], scripts: [] }
      r.us.push(run.us)
      r.scripts.push(run.scripts)
      runs.set(setting, r)
    }
  }
  return {
    redis: version,
    launches,
    tasks,
    rows: [...runs].map(([setting, r]) => {
      const usPerTask = r.us[0]!.map((_, j) => median(r.us.map((u) => u[j]!)))
      return { setting, shards: r.shards, usPerTask, scripts: r.scripts[0]!.map((_, j) => median(r.scripts.map((s) => s[j]!))), perSecond: 1e6 / usPerTask[0]! }
    })
  }
}

interface Run {
  version: string
  shards: number
  us: number[]
  scripts: number[]
}

async function onOne(tasks: number, options: Partial<RedisStoreOptions>): Promise<Run> {
  const server = await startRedis()
  try {
    return await drive(new RedisStore({ url: server.url, ...options }), [{ pid: server.pid, client: new Redis(server.url) }], tasks)
  } finally {
    await server.stop()
  }
}

async function onCluster(tasks: number, options: Partial<RedisStoreOptions>): Promise<Run> {
  const cluster = await startRedisCluster()
  try {
    const masters = cluster.nodes.filter((n) => cli(n.port, 'role').startsWith('master')).map((n) => ({ pid: n.process.pid!, client: new Redis(n.port, '127.0.0.1') }))
    return await drive(new RedisStore({ clusterNodes: cluster.seeds.split(','), ...options }), masters, tasks)
  } finally {
    await cluster.stop()
  }
}

async function drive(store: RedisStore, masters: { pid: number; client: Redis }[], tasks: number): Promise<Run> {
  const now = new Date().toISOString()
  const task = (taskId: string) => ({ taskId, status: 'working' as const, createdAt: now, lastUpdatedAt: now, ttlMs: 60_000, pollIntervalMs: 1000 })
  const one = async (i: number) => {
    const owner = `owner-${i % 1000}`
    await store.tasks.createTask(owner, task(`t${i}`))
    await store.tasks.updateTask(owner, `t${i}`, { status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } })
  }
  const load = async (from: number, count: number) => {
    let next = from
    await Promise.all(Array.from({ length: 256 }, async () => {
      while (next < from + count) await one(next++)
    }))
  }
  try {
    await store.ping()
    // Every script loaded on every master, the connections made: what follows is the steady state.
    await load(0, 2000)
    await Promise.all(masters.map((m) => m.client.config('RESETSTAT')))
    const before = masters.map((m) => cpuSeconds(m.pid))
    await load(2000, tasks)
    const us = masters.map((m, j) => ((cpuSeconds(m.pid) - before[j]!) * 1e6) / tasks)
    const calls = await Promise.all(
      masters.map(async (m) => [...(await m.client.info('commandstats')).matchAll(/^cmdstat_(?:eval(?:sha)?|fcall(?:_ro)?):calls=(\d+)/gm)].reduce((n, [, c]) => n + Number(c), 0))
    )
    const all = calls.reduce((a, b) => a + b, 0)
    const order = us.map((_, j) => j).sort((a, b) => us[b]! - us[a]!)
    const version = /redis_version:(\S+)/.exec(await masters[0]!.client.info('server'))?.[1] ?? 'unknown'
    return { version, shards: store.tasks.ledger.shards, us: order.map((j) => us[j]!), scripts: order.map((j) => calls[j]! / all) }
  } finally {
    await store.close()
    masters.forEach((m) => m.client.disconnect())
  }
}

/** The table of bench/README.md's "Task creation over a Cluster's masters". */
export function ledgerTable(l: LedgerSpread): string {
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`
  return [
    '| deployment | ledger shards | Redis CPU µs per task, each master | scripts, each master | tasks a second the busiest master feeds |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...l.rows.map((r) => `| ${r.setting} | ${r.shards} | ${r.usPerTask.map((u) => u.toFixed(1)).join(' / ')} | ${r.scripts.map(pct).join(' / ')} | ~${Math.round(r.perSecond / 100) * 100} |`)
  ].join('\n')
}
