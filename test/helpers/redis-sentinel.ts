import { writeFileSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cli, startNode, stopNodes, until, type RedisNode } from './redis-cluster.js'
import { prerequisite } from './prerequisites.js'
import { reservePort } from './redis-server.js'

export interface SentinelSet {
  /** `host:port` of the three Sentinels, as MCP_REDIS_SENTINELS takes them. */
  sentinels: string
  /** The monitored master's name (MCP_REDIS_SENTINEL_MASTER). */
  name: string
  master: RedisNode
  replica: RedisNode
  stop(): Promise<void>
}

/**
 * A master, its replica and three Sentinels (quorum 2, `down-after-milliseconds` 1000) on loopback,
 * from the Debian redis-server (`redis-server <conf> --sentinel`). Resolves once every Sentinel
 * knows the replica and the other Sentinels.
 */
export async function startSentinelSet(): Promise<SentinelSet> {
  const bin = prerequisite('redis-server')
  const dir = mkdtempSync(join(tmpdir(), 'mcp-sentinel-'))
  const name = 'mcp-test'
  const reserved = await Promise.all(Array.from({ length: 5 }, () => reservePort()))
  const nodes: RedisNode[] = []
  try {
    const [m, r, ...s] = reserved as [typeof reserved[0], typeof reserved[0], ...typeof reserved]
    await m.release()
    nodes.push(await startNode(bin, m.port, join(dir, 'm'), ['--save', '', '--appendonly', 'no']))
    await r.release()
    nodes.push(await startNode(bin, r.port, join(dir, 'r'), ['--save', '', '--appendonly', 'no', '--replicaof', '127.0.0.1', String(m.port)]))
    await until(() => cli(m.port, 'info', 'replication').includes('connected_slaves:1'), 'the replica to attach')
    for (const [i, sp] of s.entries()) {
      const sdir = join(dir, `s${i}`)
      mkdirSync(sdir, { recursive: true })
      const conf = join(sdir, 'sentinel.conf')
      writeFileSync(
        conf,
        [
          `sentinel monitor ${name} 127.0.0.1 ${m.port} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          `sentinel parallel-syncs ${name} 1`,
          ''
        ].join('\n')
      )
      await sp.release()
      nodes.push(await startNode(bin, sp.port, sdir, [conf, '--sentinel'], 'Sentinel ID is'))
    }
    for (const n of nodes.slice(2)) {
      await until(() => {
        const info = cli(n.port, 'sentinel', 'master', name)
        return /num-other-sentinels\n2\n/.test(info) && /num-slaves\n1\n/.test(info)
      }, `sentinel :${n.port} to know its peers`)
    }
  } catch (err) {
    await Promise.all(reserved.map((r) => r.release()))
    await stopNodes(nodes, dir)
    throw err
  }
  return {
    sentinels: nodes.slice(2).map((n) => `127.0.0.1:${n.port}`).join(','),
    name,
    master: nodes[0]!,
    replica: nodes[1]!,
    stop: () => stopNodes(nodes, dir)
  }
}
