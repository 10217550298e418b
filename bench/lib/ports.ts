import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'

/**
 * Loopback ports for servers a test or the bench starts as child processes, which must be told
 * their port before they bind it.
 *
 * A port the kernel picked (bind to port 0) and released is free for anyone's next bind to port 0:
 * another test file's server, started in the seconds the child takes to start, can get it, and the
 * test then talks to the wrong server (the likeliest reading of a CI failure: `npm run dev`'s test
 * found the demo's tools at once and stopped its own server before it had started). The kernel
 * picks such ports, and those of outgoing connections, only inside its ephemeral range (Linux:
 * /proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default). So these come from the ports
 * just below it, chosen at random and held bound until released: nothing but another call here can
 * take one, two calls hold distinct ports, and one process does not hand out a port again soon
 * after. Where the range cannot be read (not Linux), or leaves too little below it, the kernel picks.
 */
const BELOW = 12_000
const LOWEST = 10_000

/** The ports to choose from: [first, last], or undefined where the kernel should pick. */
export function portRange(rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): [number, number] | undefined {
  let ephemeralLow: number
  try {
    ephemeralLow = Number(readFileSync(rangeFile, 'utf8').trim().split(/\s+/)[0])
  } catch {
    return undefined
  }
  const last = ephemeralLow - 1
  const first = Math.max(LOWEST, last - BELOW + 1)
  return Number.isInteger(last) && last - first >= 1000 ? [first, last] : undefined
}

/** Bind `port` on loopback (0: the kernel picks); undefined when it is taken. */
function bind(port: number): Promise<Server | undefined> {
  const server = createServer()
  return new Promise((resolve) => {
    server.once('error', () => resolve(undefined))
    server.listen(port, '127.0.0.1', () => resolve(server))
  })
}

const range = portRange()
/** Ports this process handed out lately: not handed out again at once (a released one is free, but its server may not have bound it yet). */
const recent: number[] = []

/**
 * A loopback port held (bound) until `release()` (a second release does nothing): release it just
 * before its server binds it. From `within` (default: below the ephemeral range), or where the
 * kernel picks when that has none free.
 */
export async function reservePort(within = range): Promise<{ port: number; release(): Promise<void> }> {
  let server: Server | undefined
  if (within !== undefined) {
    const [first, last] = within
    for (let tries = 0; server === undefined && tries < 100; tries++) {
      const port = first + Math.floor(Math.random() * (last - first + 1))
      if (!recent.includes(port)) server = await bind(port)
    }
  }
  server ??= await bind(0)
  if (server === undefined) throw new Error('no loopback port could be bound')
  const held = server
  const { port } = held.address() as { port: number }
  if (recent.push(port) > 256) recent.shift()
  return {
    port,
    async release() {
      if (!held.listening) return
      held.close()
      await once(held, 'close')
    }
  }
}

/** A free loopback port (reserved, then released): for one server started at once. */
export async function freePort(): Promise<number> {
  const { port, release } = await reservePort()
  await release()
  return port
}
