import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { prerequisite } from './prerequisites.js'
import { reservePort } from './redis-server.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One redis-server process of a test deployment. */
export interface RedisNode {
  port: number
  process: ChildProcess
  /** `kill -9`: no shutdown, nothing flushed (a crash). */
  crash(): Promise<void>
  /** Start it again, same port, directory and arguments (a cluster node rejoins, as a replica). */
  restart(): Promise<RedisNode>
}

/** Start one redis-server with these extra arguments; resolves once it accepts connections. */
export async function startNode(bin: string, port: number, dir: string, args: string[], ready = 'Ready to accept connections'): Promise<RedisNode> {
  mkdirSync(dir, { recursive: true })
  const child = spawn(bin, [...args, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server :${port} did not start within 10 s:\n${out}`)), 10_000)
    child.stdout!.on('data', (d: Buffer) => {
      out += String(d)
      if (out.includes(ready)) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`redis-server :${port} exited with ${code}:\n${out}`))
    })
  })
  return {
    port,
    process: child,
    async crash() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGKILL')
      await once(child, 'exit')
    },
    restart: () => startNode(bin, port, dir, args, ready)
  }
}

/** Stop nodes (SIGTERM, or SIGKILL after 5 s) and remove their directory. */
export async function stopNodes(nodes: RedisNode[], dir: string): Promise<void> {
  await Promise.all(
    nodes.map(async ({ process: p }) => {
      if (p.exitCode !== null || p.signalCode !== null) return
      const kill = setTimeout(() => p.kill('SIGKILL'), 5000)
      p.kill('SIGTERM')
      await once(p, 'exit')
      clearTimeout(kill)
    })
  )
  rmSync(dir, { recursive: true, force: true })
}

/** `redis-cli` against one node; throws with its output when it fails. */
export function cli(port: number, ...args: string[]): string {
  const r = spawnSync(prerequisite('redis-cli'), ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stdout}${r.stderr}`)
  return r.stdout
}

export interface RedisCluster {
  /** `host:port` seeds, as MCP_REDIS_CLUSTER_NODES takes them. */
  seeds: string
  nodes: RedisNode[]
  /** The node serving `slot` as master now. */
  masterOf(slot: number): RedisNode
  /** Restart a crashed node in place (it rejoins as a replica of whoever took over). */
  restart(node: RedisNode): Promise<void>
  stop(): Promise<void>
}

/**
 * A Redis Cluster of 3 masters and 3 replicas on loopback (created with `redis-cli --cluster create
 * --cluster-replicas 1`), with a 1 s `cluster-node-timeout` so that a replica takes over a crashed
 * master within a few seconds. Resolves once every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(): Promise<RedisCluster> {
  const bin = prerequisite('redis-server')
  const dir = mkdtempSync(join(tmpdir(), 'mcp-rcluster-'))
  // The cluster bus port is chosen too (default port + 10000 may not exist or be free).
  const reserved = await Promise.all(Array.from({ length: 12 }, () => reservePort()))
  const nodes: RedisNode[] = []
  try {
    for (let i = 0; i < 6; i++) {
      const [data, bus] = [reserved[2 * i]!, reserved[2 * i + 1]!]
      await Promise.all([data.release(), bus.release()])
      const args = ['--cluster-enabled', 'yes', '--cluster-port', String(bus.port), '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000']
      nodes.push(await startNode(bin, data.port, join(dir, String(i)), [...args, '--save', '', '--appendonly', 'no']))
    }
    cli(nodes[0]!.port, '--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes')
    for (const n of nodes) await until(() => cli(n.port, 'cluster', 'info').includes('cluster_state:ok'), `node :${n.port} to see the cluster ok`)
    // Replicas synchronised (a WAIT before that waits its whole timeout).
    for (const n of nodes) {
      await until(() => {
        const info = cli(n.port, 'info', 'replication')
        return info.includes('role:slave') ? info.includes('master_link_status:up') : /slave0:.*state=online/.test(info)
      }, `node :${n.port} to be in sync`)
    }
  } catch (err) {
    await Promise.all(reserved.map((r) => r.release()))
    await stopNodes(nodes, dir)
    throw err
  }
  const byPort = new Map(nodes.map((n) => [n.port, n]))
  return {
    seeds: nodes.slice(0, 3).map((n) => `127.0.0.1:${n.port}`).join(','),
    nodes,
    masterOf(slot) {
      const live = nodes.find((n) => n.process.exitCode === null && n.process.signalCode === null)!
      for (const line of cli(live.port, 'cluster', 'nodes').split('\n')) {
        const [, addr, flags, , , , , state, ...ranges] = line.split(' ')
        if (!flags?.includes('master') || flags.includes('fail') || state !== 'connected') continue
        for (const r of ranges) {
          const [lo, hi = lo] = r.split('-').map(Number)
          if (slot >= lo! && slot <= hi!) return byPort.get(Number(addr!.split(':')[1]!.split('@')[0]))!
        }
      }
      throw new Error(`no master serves slot ${slot}`)
    },
    async restart(node) {
      const fresh = await node.restart()
      nodes[nodes.indexOf(node)] = fresh
      byPort.set(fresh.port, fresh)
    },
    stop: () => stopNodes(nodes, dir)
  }
}

/** Poll `check` every 100 ms for up to `seconds` (30). */
export async function until(check: () => boolean | Promise<boolean>, what: string, seconds = 30): Promise<void> {
  for (let i = 0; i < seconds * 10; i++) {
    try {
      if (await check()) return
    } catch {
      // not yet
    }
    await sleep(100)
  }
  throw new Error(`timed out waiting for ${what}`)
}
