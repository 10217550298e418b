import type { GatewayRow } from './gateway.js'
import { SERVER_CORE, cpuSeconds, pinned } from './procs.js'

/**
 * The upstream called directly, the baseline issue #41 measures the gateway against: the official
 * SDK's client over stdio in this process, `connections` calls at a time for `seconds` (after as
 * long a warm-up), the best of `reps`. The stdio server runs pinned where the servers run; the
 * client's CPU per call (this process) stands where the others' HTTP side does.
 */
export async function directBench(script: string, connections: number, settings: { seconds: number; reps: number }): Promise<GatewayRow> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js')
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js')
  const [command, args] = pinned(SERVER_CORE, process.execPath, [script, 'stdio'])
  const transport = new StdioClientTransport({ command, args, stderr: 'ignore' })
  const client = new Client({ name: 'bench-direct', version: '1' })
  await client.connect(transport)
  // nice and taskset exec their command: once initialize is answered, this pid is the server's.
  const child = transport.pid!
  try {
    const call = () => client.callTool({ name: 'echo', arguments: { message: 'hello' } })
    await run(call, connections, settings.seconds)
    let best: GatewayRow | undefined
    for (let rep = 0; rep < settings.reps; rep++) {
      const [cpu, childCpu] = [process.cpuUsage(), cpuSeconds(child)]
      const r = await run(call, connections, settings.seconds)
      const used = process.cpuUsage(cpu)
      const row: GatewayRow = {
        target: 'direct (SDK client over stdio)',
        connections,
        rps: r.rps,
        p50Ms: r.p50Ms,
        p99Ms: r.p99Ms,
        frontCpuUs: (used.user + used.system) / r.calls,
        upstreamCpuUs: ((cpuSeconds(child) - childCpu) * 1e6) / r.calls
      }
      if ((best?.rps ?? -1) < row.rps) best = row
    }
    return best!
  } finally {
    await client.close()
  }
}

/** `connections` callers in a loop until `seconds` pass: calls/s and latency percentiles. */
async function run(call: () => Promise<unknown>, connections: number, seconds: number): Promise<{ rps: number; p50Ms: number; p99Ms: number; calls: number }> {
  const latencies: number[] = []
  const started = performance.now()
  const end = started + seconds * 1000
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now()
        await call()
        latencies.push(performance.now() - t0)
      }
    })
  )
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!
  return { rps: latencies.length / elapsed, p50Ms: at(0.5), p99Ms: at(0.99), calls: latencies.length }
}
