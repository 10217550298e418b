import t from 'tap'
import { createHash, randomUUID } from 'node:crypto'
import { RedisStore } from '../../src/store/redis.js'
import type { TaskRecord } from '../../src/store/types.js'
import { cli, startRedisCluster, until, type RedisCluster } from '../helpers/redis-cluster.js'

// kill -9 a master of a real Redis Cluster while a store writes to it, and count what the
// acknowledged writes left behind: notifications, tasks, idempotency replay records.
const cluster = await startRedisCluster()
t.teardown(() => cluster.stop())

const sha = (s: string) => createHash('sha1').update(s).digest('hex')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const OWNERS = 30
const limits = {
  maxNotifications: 1_000_000,
  maxTasks: 1_000_000,
  maxTasksPerPrincipal: 1_000_000,
  maxIdempotencyRecords: 1_000_000,
  maxIdempotencyRecordsPerPrincipal: 1_000_000,
  maxConnections: 1_000_000
}

function task(taskId: string): TaskRecord {
  const now = new Date().toISOString()
  return { taskId, status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: 600_000, pollIntervalMs: 1000 }
}

interface Outcome {
  acked: { notifications: number; tasks: number; replays: number }
  lost: { notifications: number; tasks: number; replays: number }
  failed: number
}

/**
 * Eight writers, each a loop of acknowledged writes over 30 connections, for 1.5 s; then the master
 * of owner o0's slot is killed, the writers go on until a write to o0 succeeds again and 1 s more.
 */
async function failover(cluster: RedisCluster, waitReplicas: number): Promise<Outcome & { store: RedisStore; peer: RedisStore }> {
  const prefix = `f${randomUUID().slice(0, 8)}:`
  const open = () => new RedisStore({ clusterNodes: cluster.seeds.split(','), prefix, limits, waitReplicas, waitTimeoutMs: 1000, sweepMs: 500 })
  const [store, peer] = [open(), open()]
  await Promise.all([store.ping(), peer.ping()])
  const notified = new Map<string, Set<number>>()
  const tasks: [string, string][] = []
  const replays: [string, string][] = []
  let n = 0
  let failed = 0
  let running = true
  const writer = async () => {
    while (running) {
      const i = n++
      const owner = `o${i % OWNERS}`
      try {
        if (i % 3 === 0) {
          await store.mailbox.pushNotification(owner, { method: 'n', params: { i } })
          if (!notified.has(owner)) notified.set(owner, new Set())
          notified.get(owner)!.add(i)
        } else if (i % 3 === 1) {
          await store.tasks.createTask(owner, task(`t${i}`))
          tasks.push([owner, `t${i}`])
        } else {
          if ((await store.idempotency.beginIdempotent(owner, `r${i}`, 'd', 60_000)).state !== 'new') throw new Error('not new')
          await store.idempotency.finishIdempotent(owner, `r${i}`, `{"i":${i}}`, 600_000)
          replays.push([owner, `r${i}`])
        }
      } catch {
        failed++
        await sleep(20)
      }
    }
  }
  const writers = Array.from({ length: 8 }, writer)
  await sleep(1500)
  const slot = Number(cli(cluster.nodes.find((x) => x.process.exitCode === null)!.port, 'cluster', 'keyslot', `${prefix}c:{${sha('o0')}}`).trim())
  const victim = cluster.masterOf(slot)
  await victim.crash()
  const before = n
  // The replica takes over; then the crashed node comes back as its replica (with no persistence,
  // coming back as a master before that would be an empty master).
  await until(() => cluster.masterOf(slot) !== victim, 'a replica to take over')
  await cluster.restart(victim)
  await until(async () => {
    await store.connections.setLogLevel('o0', 'info')
    return true
  }, 'a write to the crashed master slot to succeed again')
  await sleep(1000)
  running = false
  await Promise.all(writers)
  t.ok(n > before, `${n - before} writes tried after the crash`)

  // What survived: every notification drained, every task and replay record read back.
  const got = new Set<number>()
  for (let o = 0; o < OWNERS; o++) {
    for (;;) {
      const g = await peer.mailbox.takeNotifications(`o${o}`)
      if (g === undefined) break
      for (const x of g.notifications) got.add((x.params as { i: number }).i)
      await peer.mailbox.ackNotifications(`o${o}`, g.id)
    }
  }
  const acked = [...notified.values()].flatMap((s) => [...s])
  const tasksFound = await Promise.all(tasks.map(([o, id]) => peer.tasks.getTask(o, id)))
  const replayed = await Promise.all(replays.map(([o, id]) => peer.idempotency.beginIdempotent(o, id, 'd', 60_000)))
  return {
    store,
    peer,
    failed,
    acked: { notifications: acked.length, tasks: tasks.length, replays: replays.length },
    lost: {
      notifications: acked.filter((i) => !got.has(i)).length,
      tasks: tasksFound.filter((x) => x === undefined).length,
      replays: replayed.filter((x) => x.state !== 'done').length
    }
  }
}

const report = (label: string, o: Outcome) =>
  `${label}: acknowledged ${o.acked.notifications} notifications, ${o.acked.tasks} tasks, ${o.acked.replays} replay records; ` +
  `lost ${o.lost.notifications}, ${o.lost.tasks}, ${o.lost.replays}; ${o.failed} writes refused during the failover`

t.test('with MCP_REDIS_WAIT_REPLICAS=1: nothing acknowledged is lost, and the instances carry on', async (t) => {
  const o = await failover(cluster, 1)
  t.teardown(() => Promise.all([o.store.close(), o.peer.close()]))
  t.comment(report('WAIT 1', o))
  t.ok(o.acked.notifications > 0 && o.acked.tasks > 0 && o.acked.replays > 0, 'writes were acknowledged')
  t.same(o.lost, { notifications: 0, tasks: 0, replays: 0 }, 'none lost')
  // Reconnected by themselves: a wake-up crosses instances, a cancellation reaches the other one.
  await o.store.mailbox.enqueueRequest('o0', 'after', { method: 'roots/list' })
  const answer = o.store.mailbox.awaitAnswer('o0', 'after', new AbortController().signal, 20_000)
  await sleep(50)
  await o.peer.mailbox.completeRequest('o0', 'after', { result: { roots: [] } })
  t.same(await answer, { result: { roots: [] } }, 'a wake-up after the failover')
  const heard = new Set<string>()
  o.peer.signals.onCancel((owner) => heard.add(owner))
  await until(async () => {
    for (let i = 0; i < 64; i++) await o.store.signals.publishCancel(`c${i}`, 'x', undefined)
    return heard.size === 64
  }, 'every bus channel to be heard again')
  t.equal(heard.size, 64, 'cancellations on every bus channel are heard')
})

t.test('without it: what an acknowledged write survives, measured', async (t) => {
  const o = await failover(cluster, 0)
  t.teardown(() => Promise.all([o.store.close(), o.peer.close()]))
  t.comment(report('no WAIT', o))
  t.ok(o.acked.notifications > 0 && o.acked.tasks > 0 && o.acked.replays > 0, 'writes were acknowledged')
  t.equal(await o.peer.connections.getLogLevel('o0'), 'info', 'the slot of the crashed master serves again')
})
