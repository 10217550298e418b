import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'

/** The largest answer taken from an upstream: a stdio line, or an HTTP upstream's JSON or event stream. */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024

export interface StdioChildOptions {
  command: string
  args: string[]
  env: Record<string, string>
  cwd?: string | undefined
  /** A message as the SDK's Client may see it, or a throw (the SDK's own message schema). */
  validate(message: unknown): JSONRPCMessage
  /** Each line the child writes on stderr. */
  stderr(line: string): void
  /** Longest line accepted on stdout (default {@link MAX_ANSWER_BYTES}); past it the connection is closed. */
  maxLineBytes?: number
}

const WRITTEN = Promise.resolve()
const NEWLINE = 10

/**
 * A stdio upstream: its child process and a JSON-RPC message per line each way, as the SDK's
 * `StdioClientTransport` does (spawned without a shell; at close, stdin ended, then SIGTERM, then
 * SIGKILL, 2 s apart), with two differences that matter under load:
 * - A line is parsed once, and {@link take} sees it first: the answers to the gateway's own requests
 *   stop there (checked for the little the gateway needs, see `Wire`), where the SDK ran each
 *   message through three schemas (a quarter of the gateway's garbage per call). What `take` leaves
 *   (the upstream's notifications and requests, the answer to `initialize`) is validated as the
 *   SDK's transport would before its `Client` sees it.
 * - Writes made in one turn of the event loop while {@link busy} leave together (see {@link send}).
 */
export class StdioChild implements Transport {
  onmessage?: Transport['onmessage']
  onerror?: (error: Error) => void
  onclose?: () => void
  /** Sees every message first; true: it was an answer to the gateway's own request, and is handled. */
  take: ((message: unknown) => boolean) | undefined
  /** Whether other requests are in flight (writes are then gathered). */
  busy: () => boolean = () => false
  #child: ChildProcessWithoutNullStreams | undefined
  #pid: number | undefined
  /** The start of a line not ended yet, in the chunks it came in. */
  #held: Buffer[] = []
  #heldBytes = 0
  #corked = false
  readonly #opts: StdioChildOptions

  constructor(options: StdioChildOptions) {
    this.#opts = options
  }

  /** The child's process id, once started. */
  get pid(): number | undefined {
    return this.#pid
  }

  start(): Promise<void> {
    const { command, args, env, cwd } = this.#opts
    const child = spawn(command, args, { env, stdio: 'pipe', shell: false, ...(cwd === undefined ? {} : { cwd }) })
    this.#child = child
    child.on('close', () => {
      this.#child = undefined
      this.onclose?.()
    })
    const failed = (err: Error): void => this.onerror?.(err)
    child.stdin.on('error', failed)
    child.stdout.on('error', failed)
    child.stderr.on('error', failed)
    child.stdout.on('data', (chunk: Buffer) => this.#read(chunk))
    createInterface({ input: child.stderr }).on('line', (line) => this.#opts.stderr(line))
    return new Promise((resolve, reject) => {
      child.once('spawn', () => {
        this.#pid = child.pid
        resolve()
      })
      // Before the spawn: it did not start (a reject); after: said, as any other failure.
      child.on('error', (err) => {
        reject(err)
        failed(err)
      })
    })
  }

  /**
   * Write a message. Writes made in one turn of the event loop while other requests are in flight
   * leave together: stdin is corked at the first and uncorked in the turn's check phase, after the
   * callbacks of every socket that was readable (each HTTP request's upstream message is written
   * from its own). One writev for the calls of many clients, where each was a system call of its own:
   * under 32 clients, 16% of the gateway's busy CPU was in those writes. With one client there is
   * nothing to gather, and waiting for the check phase cost it 5% of its calls.
   */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin
    if (stdin === undefined) return Promise.reject(new Error('Not connected'))
    if (!this.#corked && this.busy()) {
      this.#corked = true
      stdin.cork()
      setImmediate(() => {
        this.#corked = false
        stdin.uncork()
      })
    }
    // Past the pipe's buffer, Node keeps what is written in order; the caller need not wait.
    stdin.write(JSON.stringify(message) + '\n')
    return WRITTEN
  }

  /** Split stdout into lines, holding the start of one not ended yet (bounded). */
  #read(chunk: Buffer): void {
    let from = 0
    let end = chunk.indexOf(NEWLINE)
    while (end !== -1) {
      if (this.#heldBytes === 0) this.#line(chunk.toString('utf8', from, end))
      else {
        this.#held.push(chunk.subarray(from, end))
        const line = Buffer.concat(this.#held, this.#heldBytes + end - from).toString('utf8')
        this.#held = []
        this.#heldBytes = 0
        this.#line(line)
      }
      from = end + 1
      end = chunk.indexOf(NEWLINE, from)
    }
    if (from === chunk.length) return
    this.#heldBytes += chunk.length - from
    this.#held.push(from === 0 ? chunk : chunk.subarray(from))
    const max = this.#opts.maxLineBytes ?? MAX_ANSWER_BYTES
    if (this.#heldBytes > max) {
      this.#held = []
      this.#heldBytes = 0
      // Nothing after it can be trusted to start a line: the connection ends, and is started again.
      this.onerror?.(new Error(`the upstream wrote a line longer than ${max} bytes`))
      void this.close()
    }
  }

  #line(line: string): void {
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch {
      // A blank line (some servers end a message with \r\n\r\n) is nothing to say.
      if (line.trim() !== '') this.onerror?.(new Error(`the upstream wrote a line that is not JSON: ${line.slice(0, 200)}`))
      return
    }
    if (this.take?.(message) === true) return
    let valid: JSONRPCMessage
    try {
      valid = this.#opts.validate(message)
    } catch {
      this.onerror?.(new Error(`the upstream wrote a message that is not JSON-RPC: ${line.slice(0, 200)}`))
      return
    }
    this.onmessage?.(valid)
  }

  /** End the child: its stdin closed, then SIGTERM, then SIGKILL; resolves once it has exited. */
  async close(): Promise<void> {
    const child = this.#child
    if (child === undefined) return
    this.#child = undefined
    const exited = new Promise<true>((resolve) => child.once('close', () => resolve(true)))
    child.stdin.end()
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      // Unref'd: a child that exited at once leaves nothing to wait for (`Upstream.close` holds the process meanwhile).
      if (await Promise.race([exited, sleep(2000, false, { ref: false })])) return
      child.kill(signal)
    }
    await exited
  }
}
