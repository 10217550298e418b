import { createHash } from 'node:crypto'
import { createServer, connect, type Server, type Socket } from 'node:net'

const sha1 = (s: string) => createHash('sha1').update(s).digest('hex')

/**
 * A TCP proxy in front of a redis-server that counts what its clients send: commands (by name,
 * parsed from RESP) and writes (each `data` event from a client is one write that the server then
 * answers: with one request at a time, the writes of a request are its sequential round trips,
 * since concurrent commands of one turn leave in one write: see `batchTurns`).
 * Deterministic, unlike req/s: it holds on a loaded machine.
 */
export interface RedisCounts {
  /** Client writes (round trips, one request at a time). */
  writes: number
  /** Top-level commands (EVALSHA counts once, whatever the script calls inside). */
  commands: number
  byName: Record<string, number>
}

export interface RedisProxy {
  url: string
  /** The counts so far. */
  counts(): RedisCounts
  close(): Promise<void>
}

/**
 * Start one on loopback. With `delayMs`, every chunk waits that long, both ways and in order: a
 * Redis (or a Sentinel) far away.
 */
export async function startRedisProxy(target: string, delayMs = 0): Promise<RedisProxy> {
  const { hostname, port } = new URL(target)
  const totals: RedisCounts = { writes: 0, commands: 0, byName: {} }
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname)
    sockets.add(client).add(upstream)
    const parser = new RespCommands((name) => {
      totals.commands++
      totals.byName[name] = (totals.byName[name] ?? 0) + 1
    })
    const forward = (to: Socket, chunk: Buffer) => (delayMs > 0 ? setTimeout(() => to.write(chunk), delayMs) : to.write(chunk))
    client.on('data', (chunk: Buffer) => {
      totals.writes++
      parser.push(chunk)
      forward(upstream, chunk)
    })
    if (delayMs > 0) upstream.on('data', (chunk: Buffer) => forward(client, chunk))
    else upstream.pipe(client)
    const close = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', close).on('close', close)
    upstream.on('error', close).on('close', close)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port: own } = server.address() as { port: number }
  return {
    url: `redis://127.0.0.1:${own}`,
    counts: () => ({ writes: totals.writes, commands: totals.commands, byName: { ...totals.byName } }),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      })
  }
}

/** `after - before`, per request. */
export function perRequest(before: RedisCounts, after: RedisCounts, requests: number): RedisCounts {
  const byName: Record<string, number> = {}
  for (const [name, n] of Object.entries(after.byName)) {
    const d = n - (before.byName[name] ?? 0)
    if (d > 0) byName[name] = d / requests
  }
  return { writes: (after.writes - before.writes) / requests, commands: (after.commands - before.commands) / requests, byName }
}

/** Script names by SHA-1, learned from the scripts' first line when they were sent whole (EVAL). */
export const LEARNED_SCRIPTS: Record<string, string> = {}

/**
 * The command names of a stream of RESP requests (arrays of bulk strings), across chunk
 * boundaries. Inline commands (plain text lines) count by their first word.
 */
export class RespCommands {
  #buf: Buffer = Buffer.alloc(0)
  constructor(private readonly onCommand: (name: string) => void) {}

  push(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk])
    for (;;) {
      const used = this.#one()
      if (used === 0) return
      this.#buf = this.#buf.subarray(used)
    }
  }

  /** Bytes of one complete command at the head of the buffer, 0 when it is not complete yet. */
  #one(): number {
    const b = this.#buf
    const eol = b.indexOf('\r\n')
    if (eol < 0) return 0
    if (b[0] !== 0x2a /* '*' */) {
      this.onCommand(b.subarray(0, eol).toString().trim().split(' ')[0]!.toUpperCase())
      return eol + 2
    }
    const count = Number(b.subarray(1, eol).toString())
    let at = eol + 2
    let name = ''
    for (let i = 0; i < count; i++) {
      const end = b.indexOf('\r\n', at)
      if (end < 0) return 0
      const len = Number(b.subarray(at + 1, end).toString())
      const start = end + 2
      if (b.length < start + len + 2) return 0
      if (i === 0) name = b.subarray(start, start + len).toString().toUpperCase()
      // A script by its SHA-1 (EVALSHA) or its source's (EVAL), for the caller to name.
      else if (i === 1 && (name === 'EVALSHA' || name === 'EVAL')) {
        const arg = b.subarray(start, start + len).toString()
        const sha = name === 'EVAL' ? sha1(arg) : arg
        // This project's scripts begin with "-- <name>" (each store's copy has its own SHA-1).
        if (name === 'EVAL' && arg.startsWith('-- ')) LEARNED_SCRIPTS[sha] = arg.slice(3, arg.indexOf('\n'))
        name = `${name} ${sha}`
      } else if (i === 1 && (name === 'FCALL' || name === 'FCALL_RO' || name === 'FUNCTION')) {
        // A function by its name (which says the step), FUNCTION by its subcommand (LIST, LOAD, FLUSH).
        name = `${name} ${b.subarray(start, start + len).toString()}`
      }
      at = start + len + 2
    }
    this.onCommand(name)
    return at
  }
}
