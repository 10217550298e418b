import { readFileSync } from 'node:fs'
import { sha1 } from '../../src/store/redis-keys.js'
import { WEBHOOK_SCRIPTS } from '../../src/webhooks/redis-scripts.js'
import { CEILING_SCRIPTS } from '../servers/redis-ceiling.js'
import type { Files } from '../requests.js'
import { processOf, type Phase } from '../workloads.js'
import type { RequestSpec } from './h2load.js'
import { startRedis, startServer } from './procs.js'
import { LEARNED_SCRIPTS, perRequest, startRedisProxy, type RedisCounts } from './redis-proxy.js'

/** Redis traffic per request of one workload on one target. */
export interface RoundTrips {
  workload: string
  target: string
  requests: number
  /** Per request: writes to Redis (sequential round trips), top-level commands, commands by name. */
  perRequest: RedisCounts
}

/**
 * Redis round trips and commands per request of every Redis-store workload, for each target that
 * uses Redis (this project's server and the Redis ceiling): the server talks to Redis through a
 * counting proxy, and `requests` requests are sent one at a time, after a few unmeasured ones. Work
 * a request leaves behind (a task finishing in the background) is counted with it: the counts are
 * taken once the server is idle again. Deterministic, so meaningful on a loaded machine too.
 */
export async function roundTrips(phases: Phase[], files: Files, requests = 200): Promise<RoundTrips[]> {
  const out: RoundTrips[] = []
  for (const phase of phases.filter((p) => p.redis === true)) {
    const redis = await startRedis()
    const proxy = await startRedisProxy(redis.url)
    try {
      for (const spec of phase.servers) {
        const server = await startServer({ ...spec, env: { ...spec.env, MCP_REDIS_URL: proxy.url } })
        try {
          for (const workload of phase.workloads) {
            for (const [target, request] of Object.entries(workload.requests)) {
              if (processOf(target) !== spec.id || request === undefined) continue
              const req = typeof request === 'function' ? await request(server.base, files) : request
              for (let i = 0; i < 5; i++) await send(server.base, req)
              await idle()
              const before = proxy.counts()
              for (let i = 0; i < requests; i++) await send(server.base, req)
              await idle()
              out.push({ workload: workload.id, target, requests, perRequest: perRequest(before, proxy.counts(), requests) })
            }
          }
        } finally {
          await server.stop()
        }
      }
    } finally {
      await proxy.close()
      await redis.stop()
    }
  }
  return out
}

const idle = () => new Promise((resolve) => setTimeout(resolve, 300))

async function send(base: string, spec: RequestSpec): Promise<void> {
  const init: RequestInit =
    spec.bodyFile === undefined ? { headers: spec.headers ?? {} } : { method: 'POST', headers: spec.headers ?? {}, body: readFileSync(spec.bodyFile) }
  const res = await fetch(base + spec.path, init)
  await res.arrayBuffer()
  if (res.status !== (spec.status ?? 200)) throw new Error(`${spec.path}: ${res.status}`)
}

/** One line per workload and target: round trips, commands, and which. */
export function roundTripTable(rows: RoundTrips[], scripts: Record<string, string> = scriptNames(CEILING_SCRIPTS)): string {
  const lines = ['| workload | server | Redis round trips / request | commands / request | commands |', '| --- | --- | ---: | ---: | --- |']
  for (const r of rows) {
    const p = r.perRequest
    const names = Object.entries(p.byName)
      .sort((a, b) => b[1] - a[1])
      .map(([n, v]) => `${nameOf(n, scripts)} ${fmt(v)}`)
      .join(', ')
    lines.push(`| ${r.workload} | ${r.target} | ${fmt(p.writes)} | ${fmt(p.commands)} | ${names} |`)
  }
  return lines.join('\n')
}

/** EVALSHA <sha> as the script's name when known: this project's scripts, and those `extra` names. */
export function scriptNames(extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {}
  // The webhook worker's (the demo polls for due deliveries every second): [keys, lua] each.
  const webhooks = Object.fromEntries(Object.entries(WEBHOOK_SCRIPTS).map(([name, [, lua]]) => [`${name} (webhook worker)`, lua]))
  for (const [name, lua] of Object.entries({ ...webhooks, ...extra })) out[sha1(lua)] = name
  // This project's store scripts carry its configuration, so their SHA-1s are learned as they are loaded.
  return { ...out, ...LEARNED_SCRIPTS }
}

function nameOf(command: string, scripts: Record<string, string>): string {
  const [verb, sha] = command.split(' ')
  // EVAL sends the whole script: worth seeing, it should happen once per connection at most.
  return sha === undefined ? command : `${scripts[sha] ?? sha.slice(0, 8)}${verb === 'EVAL' ? ' (EVAL)' : ''}`
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2))
