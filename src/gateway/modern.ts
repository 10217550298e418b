import { randomUUID } from 'node:crypto'
import type { RequestContext } from '../core/request-context.js'
import { McpError, errors, messageOf } from '../errors.js'
import { isPlainObject } from '../headers.js'
import { MetaKey } from '../protocol.js'
import { fetchFor, type UpstreamSpec } from './connection.js'
import { Deadline } from './deadline.js'
import type { UpstreamFetch } from './token-exchange.js'
import { UpstreamAnswer, upstreamError } from './errors.js'
import { MAX_ANSWER_BYTES } from './stdio.js'
import { copyOf } from '../core/results.js'
import type { Logger } from '../core/request-context.js'

/** The era whose calls answer `input_required` (SEP-2322) instead of asking on a stream. */
export const MODERN = '2026-07-28'

/** Where an upstream speaking {@link MODERN} on Streamable HTTP is reached, and how. */
export interface ModernTarget {
  url: string
  headers: Record<string, string>
  /** fetch, or the one that forwards or exchanges the caller's token (see `fetchFor`). */
  fetch: UpstreamFetch
  /** For messages: the upstream's name. */
  name: string
  /** How long one request may take. */
  timeoutMs: number
}

/** Where to probe: a Streamable HTTP upstream only (an HTTP+SSE server has no endpoint that takes a POST out of session). */
export function modernTarget(spec: UpstreamSpec, name: string, timeoutMs: number, log: Logger): ModernTarget | undefined {
  if (!('url' in spec) || spec.sse === true) return undefined
  return { url: spec.url, headers: spec.headers ?? {}, fetch: fetchFor(spec, name, log), name, timeoutMs }
}

/**
 * Whether the upstream serves {@link MODERN}: its `server/discover` in that era lists it. Anything
 * else (an older server's 400 or 404, a network error) means no, and the legacy session is used.
 */
export async function speaksModern(target: ModernTarget): Promise<boolean> {
  try {
    const result = await post(target, 'server/discover', {}, {}, AbortSignal.timeout(Math.min(target.timeoutMs, 10_000)), undefined)
    return Array.isArray(result.supportedVersions) && result.supportedVersions.includes(MODERN)
  } catch {
    return false
  }
}

/**
 * One round of `method` upstream in {@link MODERN}, on behalf of `ctx`: the caller's capabilities
 * in the envelope (so the upstream asks only what the caller can answer), its answers and the
 * upstream's own `requestState` from the last round passed back, progress and log messages relayed
 * as they stream in. The result comes back as the upstream gave it, `input_required` included.
 */
export async function modernRound(
  target: ModernTarget,
  ctx: RequestContext,
  method: string,
  params: Record<string, unknown>,
  extraHeaders: Record<string, string>,
  relay: { progress(p: { progress: number; total?: number; message?: string }): void; log(params: Record<string, unknown>): void }
): Promise<Record<string, unknown>> {
  // The same deadline as a stdio or legacy upstream's request: silence, counted again at each message the answer streams.
  const deadline = new Deadline(target.timeoutMs, ctx.signal)
  deadline.start()
  try {
    return await post(target, method, params, extraHeaders, deadline.signal, ctx, relay, deadline).finally(() => deadline.end())
  } catch (err) {
    if (err instanceof McpError) throw err
    if (deadline.passed) throw errors.upstreamTimeout(target.name, target.timeoutMs)
    throw upstreamError(err, target.name, ctx.signal)
  }
}

async function post(
  target: ModernTarget,
  method: string,
  params: Record<string, unknown>,
  extraHeaders: Record<string, string>,
  signal: AbortSignal,
  ctx: RequestContext | undefined,
  relay?: Parameters<typeof modernRound>[5],
  deadline?: Deadline
): Promise<Record<string, unknown>> {
  const token = relay === undefined ? undefined : randomUUID()
  const meta: Record<string, unknown> = {
    [MetaKey.protocolVersion]: MODERN,
    [MetaKey.clientCapabilities]: withoutTasks(ctx?.clientCapabilities),
    [MetaKey.clientInfo]: { name: 'mcp-pure-http-gateway', version: '0.1.0' }
  }
  if (token !== undefined) meta.progressToken = token
  // The log messages the caller wants (a legacy caller's level is its connection's: the core filters them).
  const level = ctx === undefined ? undefined : ctx.era === 'modern' ? ctx.meta?.[MetaKey.logLevel] : 'debug'
  if (level !== undefined) meta[MetaKey.logLevel] = level
  const id = 1
  // Copies, then the fixed members (not a spread followed by members: see copyOf).
  const withMeta = copyOf(params)
  withMeta._meta = meta
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: withMeta })
  // Header values are strings: an own __proto__ key among them cannot become a prototype.
  const headers: Record<string, string> = Object.assign({}, target.headers, extraHeaders)
  headers['content-type'] = 'application/json'
  headers.accept = 'application/json, text/event-stream'
  headers['mcp-protocol-version'] = MODERN
  headers['mcp-method'] = method
  const named = method === 'resources/read' ? params.uri : method === 'server/discover' ? undefined : params.name
  if (typeof named === 'string') headers['mcp-name'] = headerText(named)
  const res = await target.fetch(target.url, { method: 'POST', headers, body, signal })
  let answer: unknown
  if (String(res.headers.get('content-type')).startsWith('text/event-stream')) {
    answer = await fromStream(res, id, (m) => {
      deadline?.touch()
      if (m.method === 'notifications/progress' && isPlainObject(m.params) && m.params.progressToken === token) relay?.progress(m.params as never)
      else if (m.method === 'notifications/message' && isPlainObject(m.params)) relay?.log(m.params)
    })
  } else {
    const text = await boundedText(res)
    try {
      answer = JSON.parse(text)
    } catch {
      throw errors.upstreamBadAnswer(`The upstream server ${target.name} answered ${res.status} without JSON`)
    }
  }
  if (!isPlainObject(answer)) throw errors.upstreamBadAnswer(`The upstream server ${target.name} answered no JSON-RPC message`)
  if (isPlainObject(answer.error)) {
    const e = answer.error
    const err = upstreamError(new UpstreamAnswer(e.code as number, String(e.message), e.data), target.name)
    // 2026-07-28 gives each refusal its status (400 -32021, 404 -32601...): the caller gets the same.
    if (err instanceof McpError && res.status >= 400 && res.status < 500) throw err.with({ status: res.status })
    throw err
  }
  if (!isPlainObject(answer.result)) throw errors.upstreamBadAnswer(`The upstream server ${target.name} answered without a result`)
  return answer.result
}

/**
 * The caller's capabilities less the Tasks extension: a task the upstream made would be polled
 * here, where it is unknown, so the upstream runs every call to its end instead.
 */
function withoutTasks(caps: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  if (caps === undefined) return {}
  const { extensions, ...rest } = caps
  if (!isPlainObject(extensions)) return { ...rest }
  const { 'io.modelcontextprotocol/tasks': _tasks, ...others } = extensions
  return Object.keys(others).length === 0 ? rest : { ...rest, extensions: others }
}

/** The response's bytes as they come (none for a body-less answer), refused past {@link MAX_ANSWER_BYTES}. */
async function * bounded(res: Response): AsyncGenerator<Uint8Array> {
  let bytes = 0
  for await (const chunk of res.body ?? []) {
    bytes += chunk.length
    if (bytes > MAX_ANSWER_BYTES) throw errors.upstreamBadAnswer('The upstream server\'s answer is too large')
    yield chunk
  }
}

async function boundedText(res: Response): Promise<string> {
  const chunks: Uint8Array[] = []
  for await (const chunk of bounded(res)) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

/** Read an SSE answer: each event one JSON-RPC message; notifications to `heard`, the response with `id` returned. */
async function fromStream(res: Response, id: number, heard: (m: Record<string, unknown>) => void): Promise<unknown> {
  const decoder = new TextDecoder()
  let buffer = ''
  let data: string[] = []
  for await (const chunk of bounded(res)) {
    buffer += decoder.decode(chunk, { stream: true })
    let nl: number
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '')
      buffer = buffer.slice(nl + 1)
      if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      else if (line === '' && data.length > 0) {
        let m: unknown
        try {
          m = JSON.parse(data.join('\n'))
        } catch (err) {
          throw errors.upstreamBadAnswer(`The upstream server sent an event that is not JSON: ${messageOf(err)}`)
        }
        data = []
        if (!isPlainObject(m)) continue
        // The upstream's own requests have ids of their own space: the answer is the message without a method.
        if (m.id === id && m.method === undefined) return m
        heard(m)
      }
    }
  }
  throw errors.upstreamBadAnswer('The upstream server ended its stream without an answer')
}

/** A header value as SEP-2243 carries it: plain printable ASCII as is, anything else `=?base64?...?=`. */
export function headerText(value: string): string {
  return /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`
}
