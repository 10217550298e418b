import { readFileSync } from 'node:fs'
import type { RequestSpec } from './h2load.js'
import type { Files } from '../requests.js'
import type { Phase } from '../workloads.js'

/**
 * A ratio to bare Fastify means something only if bare answers what ours answers: the same status,
 * the same content type, and the same JSON (byte for byte where nothing in it is made per request).
 * The bench checks every workload that pairs the two before it measures them (bench/run.ts), and
 * `test/deploy/bench-fair.test.ts` runs the same check on the in-memory phases.
 */

// What is made per request: ids, clocks, and the sealed state (a fresh nonce each time).
const MADE = new Set(['taskId', 'createdAt', 'lastUpdatedAt', 'requestState'])
const stable = (json: string) => JSON.stringify(JSON.parse(json), (key, value) => (MADE.has(key) ? typeof value : value))

// Headers made per request (present in both, values not compared), those compared on their own
// (the content type, the message group's presence), and the connection's own.
const MADE_HEADERS = new Set(['mcp-request-id', 'etag', 'location'])
const OWN_CHECK = new Set(['content-type', 'mcp-message-group'])
const TRANSPORT_HEADERS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'])

interface Answer {
  status: number
  type: string | null
  body: string
  group: string | null
  /** Every header but the transport's, by lowercase name. */
  headers?: Record<string, string>
}

/** One request as h2load sends it (its path or the first of its URIs, its body file, its headers). */
async function ask(base: string, spec: RequestSpec): Promise<Answer> {
  const url = spec.uriFile === undefined ? base + spec.path : readFileSync(spec.uriFile, 'utf8').split('\n')[0]!
  const res = await fetch(url, {
    method: spec.bodyFile === undefined ? 'GET' : 'POST',
    headers: spec.headers ?? {},
    ...(spec.bodyFile === undefined ? {} : { body: readFileSync(spec.bodyFile) })
  })
  const headers: Record<string, string> = {}
  for (const [name, value] of res.headers) if (!TRANSPORT_HEADERS.has(name)) headers[name] = value
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text(), group: res.headers.get('mcp-message-group'), headers }
}

/** How two answers to the same request differ (none: they match). */
export function differences(ours: Answer, bare: Answer, expectedStatus = 200): string[] {
  const why: string[] = []
  if (ours.status !== expectedStatus) why.push(`ours answers ${ours.status}, the bench expects ${expectedStatus}`)
  if (bare.status !== ours.status) why.push(`status ${bare.status} from bare, ${ours.status} from ours`)
  if (ours.headers !== undefined && bare.headers !== undefined) why.push(...headerDifferences(ours.headers, bare.headers))
  if (ours.status === 304) {
    if (ours.body !== '' || bare.body !== '') why.push('a body with a 304')
    return why
  }
  if (bare.type !== ours.type) why.push(`content type ${bare.type} from bare, ${ours.type} from ours`)
  if ((bare.group !== null) !== (ours.group !== null)) why.push('a message group id from only one of them')
  const volatile = [...MADE].some((key) => ours.body.includes(`"${key}"`))
  if (volatile ? safeStable(bare.body) !== safeStable(ours.body) : bare.body !== ours.body) {
    why.push(`bodies differ${volatile ? ' (but for ids, clocks and sealed state)' : ''}: bare ${bare.body.slice(0, 200)} / ours ${ours.body.slice(0, 200)}`)
  }
  return why
}

/** The same headers, with the same values but for those made per request (ids, and an etag or a location made of them). */
function headerDifferences(ours: Record<string, string>, bare: Record<string, string>): string[] {
  const why: string[] = []
  for (const name of new Set([...Object.keys(ours), ...Object.keys(bare)])) {
    if (OWN_CHECK.has(name)) continue
    const [a, b] = [ours[name], bare[name]]
    if (a === undefined || b === undefined) why.push(`header ${name} from ${a === undefined ? 'bare' : 'ours'} only`)
    else if (!MADE_HEADERS.has(name) && a !== b) why.push(`header ${name}: ${b} from bare, ${a} from ours`)
  }
  return why
}

function safeStable(json: string): string {
  try {
    return stable(json)
  } catch {
    return `not JSON: ${json}`
  }
}

/**
 * Each workload of `phase` that pairs ours with bare, asked once of each running server: the
 * workload's id and how the answers differ (an empty list when bare answers what ours answers).
 */
export async function fairness(phase: Phase, ours: string, bare: string, files: Files): Promise<{ workload: string; differences: string[] }[]> {
  const results: { workload: string; differences: string[] }[] = []
  for (const workload of phase.workloads) {
    const mine = workload.requests.ours
    const theirs = workload.requests.bare
    if (mine === undefined || theirs === undefined) continue
    const specOf = async (request: typeof mine, base: string) => (typeof request === 'function' ? request(base, files) : request)
    const [spec, other] = await Promise.all([specOf(mine, ours), specOf(theirs, bare)])
    const [a, b] = await Promise.all([ask(ours, spec), ask(bare, other)])
    results.push({ workload: workload.id, differences: differences(a, b, spec.status ?? 200) })
  }
  return results
}
