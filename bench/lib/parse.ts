/** Reading h2load's output: pure, so the tests check it on samples. */

export interface Summary {
  rps: number
  /** Requests done, whatever their status. */
  requests: number
  /** Failed, errored or timed out: no answer. */
  failed: number
  /** Answers by status class: `[1xx, 2xx, 3xx, 4xx, 5xx]` at indexes 1 to 5 (1xx is not counted). */
  statusCounts: number[]
  /** Bytes received, headers and bodies. */
  bytes: number
}

/** The numbers of h2load's report; throws on a report without them. */
export function parseSummary(out: string): Summary {
  const match = (re: RegExp) => {
    const m = re.exec(out)
    if (m === null) throw new Error(`h2load output without ${re}:\n${out}`)
    return m.slice(1).map(Number)
  }
  const [failed, errored, timeout] = match(/(\d+) failed, (\d+) errored, (\d+) timeout/)
  return {
    rps: match(/finished in [\d.]+m?s, ([\d.]+) req\/s/)[0]!,
    requests: match(/requests: \d+ total, \d+ started, (\d+) done/)[0]!,
    failed: failed! + errored! + timeout!,
    statusCounts: [0, 0, ...match(/status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/)],
    bytes: match(/traffic: [^(]*\((\d+)\) total/)[0]!
  }
}

/** p50 and p99, in ms, of h2load's log (start µs, status, duration µs per line). */
export function percentiles(log: string): { p50Ms: number; p99Ms: number } {
  const lines = log.split('\n')
  const durations = new Float64Array(lines.length)
  let n = 0
  for (const line of lines) {
    const tab = line.lastIndexOf('\t')
    if (tab > 0) durations[n++] = Number(line.slice(tab + 1))
  }
  const sorted = durations.subarray(0, n).sort()
  const at = (q: number) => (n === 0 ? NaN : sorted[Math.min(n - 1, Math.floor(q * n))]! / 1000)
  return { p50Ms: at(0.5), p99Ms: at(0.99) }
}

/**
 * The terms of `--only` or `--skip`, lower-cased: split at commas outside parentheses, so that a
 * workload's own id (`task: create (202, Redis store)`, `(1,000 queued)`) is one term.
 * @example terms('MRTR, task: create (202, Redis store)') // ['mrtr', 'task: create (202, redis store)']
 */
export function terms(list: string): string[] {
  const out: string[] = []
  let depth = 0
  let term = ''
  for (const c of list) {
    if (c === ',' && depth === 0) {
      out.push(term)
      term = ''
      continue
    }
    if (c === '(') depth++
    else if (c === ')') depth = Math.max(0, depth - 1)
    term += c
  }
  out.push(term)
  return out.map((s) => s.trim().toLowerCase()).filter((s) => s !== '')
}
