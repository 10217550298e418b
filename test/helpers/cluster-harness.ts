import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startRedisCluster } from './redis-cluster.js'
import { prerequisite } from './prerequisites.js'
import { reservePort, startRedis } from './redis-server.js'

const main = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface Instance {
  port: number
  upstream: string
  process: ChildProcess
  log: () => string
}

export interface Cluster {
  url: string
  /** What the instances share: one redis-server, or a Redis Cluster. */
  redis: { stop(): Promise<void> }
  instances: Instance[]
  nginx: ChildProcess
  stop(): Promise<void>
}

/** nginx in front of the instances: round-robin, HTTP/1.1 keep-alive upstream, X-Upstream tells who answered. */
export function nginxConf(dir: string, port: number, upstreams: number[]): string {
  return `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream mcp {
${upstreams.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=30s;`).join('\n')}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 1m;
    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_read_timeout 300s;
      proxy_buffering off;
      add_header X-Upstream $upstream_addr always;
    }
  }
}
`
}

// 60 s: a gateway instance starts its upstream child and fetches its lists before it listens, on a
// machine shared with other test files.
async function waitFor(url: string, what: string, proc: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}:\n${log()}`)
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false
    )
    if (ok) return
    await sleep(50)
  }
  throw new Error(`${what} did not become healthy within 60 s:\n${log()}`)
}

/**
 * A real redis-server (or a Redis Cluster of six), `count` instances of `node dist/src/main.js` (or
 * `node <args>`) sharing it (and one MCP_STATE_KEYS), and nginx round-robin in front, all on free
 * loopback ports. Fails loudly when redis-server or nginx is missing.
 */
export async function startCluster(
  count = 3,
  store: 'redis' | 'redis-cluster' = 'redis',
  args: readonly string[] = [main],
  /** More settings of every instance. */
  env: Record<string, string> = {}
): Promise<Cluster> {
  const nginxBin = prerequisite('nginx')
  const single = store === 'redis' ? await startRedis() : undefined
  const multi = single === undefined ? await startRedisCluster() : undefined
  const redis = (single ?? multi)!
  const shared = single !== undefined ? { MCP_REDIS_URL: single.url } : { MCP_REDIS_CLUSTER_NODES: multi!.seeds }
  const dir = mkdtempSync(join(tmpdir(), 'mcp-cluster-'))
  // Every port is held from the start, so all are distinct, and each is let go just before its
  // server binds it (nginx's after the instances are up).
  const nginxReserved = await reservePort()
  const nginxPort = nginxReserved.port
  const reserved = await Promise.all(Array.from({ length: count }, () => reservePort()))
  const ring = `k1:${Buffer.alloc(32, 9).toString('base64url')}`
  const instances: Instance[] = []
  let nginx: ChildProcess | undefined
  const stop = async () => {
    await Promise.all([nginxReserved, ...reserved].map((r) => r.release()))
    // SIGTERM and wait: the graceful path, and what writes each child's coverage.
    await Promise.all(
      instances.map(async (i) => {
        if (i.process.exitCode === null && i.process.signalCode === null) {
          i.process.kill('SIGTERM')
          await once(i.process, 'exit')
        }
      })
    )
    if (nginx !== undefined && nginx.exitCode === null) {
      nginx.kill('SIGTERM')
      await once(nginx, 'exit')
    }
    await redis.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    for (const { port, release } of reserved) {
      await release()
      let out = ''
      const child = spawn(process.execPath, args, {
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(port),
          LOG_LEVEL: 'warn',
          ...shared,
          MCP_REDIS_PREFIX: 'cluster:',
          MCP_STATE_KEYS: ring,
          // Clients reach the instances through nginx: that is the Host they send.
          MCP_ALLOWED_HOSTS: `127.0.0.1:${nginxPort}`,
          MCP_TRUST_PROXY: '127.0.0.1',
          // A retry after an instance died runs again once the dead instance's claim lapses.
          MCP_IDEMPOTENCY_LEASE_MS: '2000',
          ...env
        },
        stdio: ['ignore', 'pipe', 'pipe']
      })
      child.stdout!.on('data', (d: Buffer) => (out += String(d)))
      child.stderr!.on('data', (d: Buffer) => (out += String(d)))
      instances.push({ port, upstream: `127.0.0.1:${port}`, process: child, log: () => out })
    }
    for (const [n, i] of instances.entries()) await waitFor(`http://127.0.0.1:${i.port}/health`, `instance ${n}`, i.process, i.log)
    const conf = join(dir, 'nginx.conf')
    writeFileSync(conf, nginxConf(dir, nginxPort, instances.map((i) => i.port)))
    await nginxReserved.release()
    nginx = spawn(nginxBin, ['-p', dir, '-e', join(dir, 'error.log'), '-c', conf, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let nginxOut = ''
    nginx.stderr!.on('data', (d: Buffer) => (nginxOut += String(d)))
    const nginxLog = () => nginxOut + readFileSync(join(dir, 'error.log'), { encoding: 'utf8', flag: 'a+' })
    await waitFor(`http://127.0.0.1:${nginxPort}/health`, 'nginx', nginx, nginxLog)
  } catch (err) {
    await stop()
    throw err
  }
  return { url: `http://127.0.0.1:${nginxPort}`, redis, instances, nginx: nginx!, stop }
}
