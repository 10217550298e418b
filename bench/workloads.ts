import { join } from 'node:path'
import type { ServerSpec } from './lib/procs.js'
import { TEXT, callTool, createTask, listTools, mrtrRound1, mrtrRound2, pollTask, revalidate, spread, type Requests } from './requests.js'

/**
 * What the bench runs: phases (a set of server processes started together) and, in each, the
 * workloads (one request shape per target). To add a workload, add an entry to a phase's
 * `workloads` with a request per target; to add a store or a server variant, add a phase.
 */

/** A fixed key ring, so round-2 requests prepared from a round-1 answer open on the server. */
export const STATE_KEYS = 'bench:YmVuY2gtb25seS1rZXktbm90LWEtc2VjcmV0LTAwMDE' // 32 bytes, no secret

export interface Workload {
  id: string
  /** Targets to drive, each with its request (see {@link processOf} for the process serving one). */
  requests: Requests
}

export interface Phase {
  id: string
  /** Start a redis-server for the phase and give this project's server its URL (MCP_REDIS_URL). */
  redis?: boolean
  /** Start a Redis Cluster (3 masters, 3 replicas) and give this project's server its seeds (MCP_REDIS_CLUSTER_NODES). */
  redisCluster?: boolean
  /** More environment for this project's server (e.g. MCP_REDIS_WAIT_REPLICAS). */
  oursEnv?: Record<string, string>
  /** Server processes by id; a target `sdk-v2-modern` runs on the process `sdk-v2`. */
  servers: ServerSpec[]
  workloads: Workload[]
}

/**
 * A server's environment in a phase: this project's server and bare Fastify take the phase's store
 * (`store`: its Redis URL or cluster seeds; bare's Redis ceiling uses it), this project's its
 * `oursEnv` too; the SDK servers have no store.
 */
export function serverEnv(phase: Phase, spec: ServerSpec, store: Record<string, string>): Record<string, string> | undefined {
  if (spec.id === 'ours') return { ...spec.env, ...store, ...phase.oursEnv }
  return spec.id === 'bare' ? { ...spec.env, ...store } : spec.env
}

/** The process serving a target. */
export const processOf = (target: string): string => (target === 'sdk-v2-modern' ? 'sdk-v2' : target)

const SDK_TARGETS = ['ours', 'bare', 'sdk-v1', 'sdk-v2', 'sdk-v2-modern'] as const

function servers(tools: number, ours: 'demo' | 'catalogue', sdks: boolean, dist: string, notifications = 0, connections = 0): ServerSpec[] {
  const env = { TOOLS: String(tools), NOTIFICATIONS: String(notifications), CONNECTIONS: String(connections) }
  const list: ServerSpec[] = [
    ours === 'demo'
      ? { id: 'ours', args: [join(dist, 'src/main.js')], env: { LOG_LEVEL: 'silent', MCP_STATE_KEYS: STATE_KEYS }, readyPath: '/health' }
      : { id: 'ours', args: [join(dist, 'bench/servers/ours.js')], env, readyPath: '/health' },
    { id: 'bare', args: [join(dist, 'bench/servers/bare.js')], env: { ...env, MCP_STATE_KEYS: STATE_KEYS }, readyPath: '/tools' }
  ]
  if (sdks) {
    list.push(
      { id: 'sdk-v1', args: [join(dist, 'bench/servers/sdk-v1.js')], env: { TOOLS: String(tools) }, readyPath: '/mcp' },
      { id: 'sdk-v2', args: [join(dist, 'bench/servers/sdk-v2.js')], env: { TOOLS: String(tools) }, readyPath: '/mcp' }
    )
  }
  return list
}

export const SCALES = [10, 100, 1000] as const

/** The gateway's workload: its SDK server is its upstream, not a competitor (no 20x target). */
export const GATEWAY_ECHO = 'tools/call echo (gateway, stdio upstream)'

/** The logical connections of the `connections-10000` phase. */
export const CONNECTIONS = 10_000

/** Every phase of a full run. `dist` is the build folder (`dist/`). */
export function phases(dist: string): Phase[] {
  const core: Phase = {
    id: 'core',
    // This project's own demo server (npm start), against the others with echo alone.
    servers: servers(1, 'demo', true, dist),
    workloads: [
      { id: 'tools/call echo', requests: callTool('echo', { text: TEXT }, SDK_TARGETS) },
      // A tool that returns an object (no target): what copying a result costs stays visible.
      { id: 'tools/call add (object result)', requests: callTool('add', { a: 2, b: 3 }, ['ours', 'bare']) },
      { id: 'MRTR round 1 (seal)', requests: { ours: mrtrRound1, bare: mrtrRound1 } },
      { id: 'MRTR round 2 (open)', requests: { ours: mrtrRound2, bare: mrtrRound2 } }
    ]
  }
  const list200: Phase = {
    id: 'list-200',
    servers: servers(200, 'catalogue', true, dist),
    workloads: [
      { id: 'tools/list (200 tools)', requests: listTools(SDK_TARGETS) },
      { id: 'tools/list 304 (200 tools)', requests: { ours: revalidate, bare: revalidate } }
    ]
  }
  const notifications: Phase = {
    id: 'notifications',
    servers: servers(1, 'catalogue', false, dist),
    workloads: [
      { id: 'GET /notifications (nothing pending)', requests: { ours: { path: '/notifications' }, bare: { path: '/notifications' } } },
      { id: 'task: create (202)', requests: { ours: createTask, bare: createTask } },
      { id: 'task: poll a completed task', requests: { ours: pollTask, bare: pollTask } }
    ]
  }
  const notifications1000: Phase = {
    // A connection with 1,000 notifications waiting: GET hands out the same group of 100 until
    // it is acknowledged, so every request reads (and serializes) a full group.
    id: 'notifications-1000',
    servers: servers(1, 'catalogue', false, dist, 1000),
    workloads: [
      { id: 'GET /notifications (1,000 queued)', requests: { ours: { path: '/notifications' }, bare: { path: '/notifications' } } },
      { id: 'tools/call echo (1,000 queued notifications)', requests: callTool('echo', { text: TEXT }, ['ours', 'bare']) }
    ]
  }
  const gateway: Phase = {
    // The gateway (mcp-pure-http gateway) in front of the SDK v1 echo over stdio, against that
    // same SDK server on its own Streamable HTTP: the CPU µs/request of the gateway's process is
    // what it adds per call (the upstream child's own CPU is not counted in it).
    id: 'gateway',
    servers: [
      {
        id: 'ours',
        args: [join(dist, 'bin/mcp-pure-http.js'), 'gateway', '--', process.execPath, join(dist, 'bench/servers/sdk-v1-stdio.js')],
        env: { LOG_LEVEL: 'silent' },
        readyPath: '/ready'
      },
      { id: 'sdk-v1', args: [join(dist, 'bench/servers/sdk-v1.js')], env: { TOOLS: '1' }, readyPath: '/mcp' }
    ],
    workloads: [{ id: GATEWAY_ECHO, requests: callTool('echo', { text: TEXT }, ['ours', 'sdk-v1']) }]
  }
  return [
    core,
    list200,
    notifications,
    notifications1000,
    {
      // 10,000 logical connections (principals), each with a notification group outstanding: the
      // cost of finding a connection's state among many, and the memory they hold.
      id: 'connections-10000',
      servers: servers(1, 'catalogue', false, dist, 0, CONNECTIONS),
      workloads: [
        {
          id: 'GET /notifications (10,000 connections)',
          requests: { ours: spread(CONNECTIONS, '/notifications'), bare: spread(CONNECTIONS, '/notifications') }
        },
        {
          id: 'tools/call echo (10,000 connections)',
          requests: {
            ours: spread(CONNECTIONS, '/tools/echo/calls', { arguments: { text: TEXT } }),
            bare: spread(CONNECTIONS, '/tools/echo/calls', { arguments: { text: TEXT } })
          }
        }
      ]
    },
    ...SCALES.map((n) => ({
      id: `scale-${n}`,
      servers: servers(n, 'catalogue', false, dist),
      workloads: [
        { id: `tools/call echo (${n} tools)`, requests: callTool('echo', { text: TEXT }, ['ours', 'bare']) },
        { id: `tools/list (${n} tools)`, requests: listTools(['ours', 'bare']) }
      ]
    })),
    // The same workloads with every connection, queue and task in Redis (on the servers' core).
    ...[core, list200, notifications, notifications1000].map(withRedis),
    // On a Redis Cluster, and with every acknowledged write confirmed by a replica (WAIT 1).
    ...[core, notifications].map((p) => withRedisCluster(p, false)),
    withRedisCluster(notifications, true),
    gateway
  ]
}

/**
 * A phase's twin on a Redis Cluster of 3 masters and 3 replicas (this project's server only); with
 * `wait`, MCP_REDIS_WAIT_REPLICAS=1: what confirming each acknowledged write on a replica costs.
 */
function withRedisCluster(phase: Phase, wait: boolean): Phase {
  const label = wait ? 'Redis Cluster, WAIT 1' : 'Redis Cluster'
  return {
    id: `redis-cluster-${wait ? 'wait-' : ''}${phase.id}`,
    redisCluster: true,
    ...(wait ? { oursEnv: { MCP_REDIS_WAIT_REPLICAS: '1' } } : {}),
    servers: phase.servers.filter((s) => s.id === 'ours'),
    workloads: phase.workloads
      .filter((w) => 'ours' in w.requests)
      .map((w) => ({
        id: w.id.endsWith(')') ? `${w.id.slice(0, -1)}, ${label})` : `${w.id} (${label})`,
        requests: { ours: w.requests.ours! }
      }))
  }
}

/**
 * A phase's twin with a Redis store: a redis-server for the phase, this project's server and bare
 * Fastify only (the SDK servers have no store), each workload's id saying so. A 2026-07-28 MRTR round
 * keeps its state in the sealed requestState, not in the store: there it measures what Redis adds.
 */
function withRedis(phase: Phase): Phase {
  const mine = (requests: Requests) => Object.fromEntries(Object.entries(requests).filter(([target]) => target === 'ours' || target === 'bare'))
  return {
    id: `redis-${phase.id}`,
    redis: true,
    servers: phase.servers.filter((s) => s.id === 'ours' || s.id === 'bare'),
    workloads: phase.workloads.map((w) => ({
      id: w.id.endsWith(')') ? `${w.id.slice(0, -1)}, Redis store)` : `${w.id} (Redis store)`,
      requests: mine(w.requests)
    }))
  }
}

/**
 * Workloads of the issue the bench does not run yet, reported as skipped with the feature they
 * wait for. None at present.
 */
export const PENDING: { workload: string; feature: string }[] = []
