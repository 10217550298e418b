import { createRequire } from 'node:module'
import type * as Undici from 'undici'
import { checkUrl, guardedLookup, RefusedTarget } from './ssrf.js'
import { signedHeaders } from './sign.js'

/** How one attempt ended. */
export interface AttemptResult {
  ok: boolean
  /** The receiver answered 410 Gone: disable the webhook. */
  gone: boolean
  responseStatus?: number
  error?: string
  durationMs: number
}

// undici is loaded with the first delivery, not with the server: it costs ~150 ms of CPU at start,
// and most servers never deliver a webhook.
let undici: typeof Undici | undefined
const loadUndici = (): typeof Undici => (undici ??= createRequire(import.meta.url)('undici') as typeof Undici)

/** What is read of a receiver's answer before it is dropped: enough for a status line's worth. */
const MAX_RESPONSE_BYTES = 4096

/**
 * Sends deliveries: one agent whose every connection goes through {@link guardedLookup}, and one
 * for the allow-listed hosts, which skip the address rules. Redirects are never followed (undici's
 * `request` does not), so a 3xx is a failed attempt, not a way around the rules.
 */
export class Sender {
  #agents: { guarded: Undici.Dispatcher; trusted: Undici.Dispatcher } | undefined

  constructor(
    readonly allowedHosts: readonly string[],
    readonly timeoutMs: number
  ) {}

  /** The two agents, made at the first delivery. */
  #dispatchers(): { guarded: Undici.Dispatcher; trusted: Undici.Dispatcher } {
    if (this.#agents !== undefined) return this.#agents
    const { Agent } = loadUndici()
    const common = { connections: 8, keepAliveTimeout: 10_000, connectTimeout: this.timeoutMs }
    this.#agents = { guarded: new Agent({ ...common, connect: { lookup: guardedLookup, timeout: this.timeoutMs } }), trusted: new Agent(common) }
    return this.#agents
  }

  /** POST the signed body; never throws. */
  async send(url: string, secret: string, id: string, body: string): Promise<AttemptResult> {
    const started = performance.now()
    const took = () => Math.round(performance.now() - started)
    try {
      // Checked again at every attempt: the allow-list or the rules may have changed since registration.
      const target = checkUrl(url, this.allowedHosts)
      const agents = this.#dispatchers()
      const res = await loadUndici().request(target.url, {
        method: 'POST',
        headers: { ...signedHeaders(secret, id, body), 'user-agent': 'mcp-pure-http-webhooks' },
        body,
        dispatcher: target.allowed ? agents.trusted : agents.guarded,
        signal: AbortSignal.timeout(this.timeoutMs)
      })
      let read = 0
      for await (const chunk of res.body) {
        read += (chunk as Buffer).length
        if (read >= MAX_RESPONSE_BYTES) break
      }
      const status = res.statusCode
      const ok = status >= 200 && status < 300
      const out: AttemptResult = { ok, gone: status === 410, responseStatus: status, durationMs: took() }
      if (!ok) out.error = `The receiver answered ${status}`
      return out
    } catch (err) {
      return { ok: false, gone: false, error: reasonOf(err), durationMs: took() }
    }
  }

  async close(): Promise<void> {
    const agents = this.#agents
    if (agents !== undefined) await Promise.all([agents.guarded.close(), agents.trusted.close()])
  }
}

function reasonOf(err: unknown): string {
  // undici wraps a refused lookup in its connect error: the rule is in the cause.
  const e = err as Error & { cause?: unknown; code?: string }
  const refused = [e, e.cause].find((x) => x instanceof RefusedTarget) as RefusedTarget | undefined
  if (refused !== undefined) return refused.message
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'The receiver did not answer in time'
  return [e.code, e.message].filter((v) => v !== undefined).join(': ')
}
