// The chart of bench/results/latest.json as SVG, drawn by hand: two bar panels need no charting library.
import { ORDER, RATIO_TARGETS, SDKS, SDK_FACTOR, TARGETS, find, fmt, median, pairedRatios, ratio, workloads, type Results } from './report.js'

const COLORS: Record<string, string> = {
  ours: '#2563eb',
  bare: '#9ca3af',
  'sdk-v1': '#f59e0b',
  'sdk-v2': '#dc2626',
  'sdk-v2-modern': '#7c3aed'
}
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

// Room for the longest workload label ("tools/call echo (1,000 queued notifications, Redis store)")
// in bold, left of a plot as wide as before.
const LEFT = 410
const WIDTH = 1040
const PLOT = WIDTH - LEFT - 80
const BAR = 14

interface Bar {
  target: string
  value: number
  /** The same ratio from CPU time per request, drawn as a tick across the bar. */
  byCpu: number
  label: string
  tip: string
}
interface Panel {
  title: string
  subtitle: string
  groups: { workload: string; bars: Bar[]; goal?: number }[]
  /** Value to x offset in [0, 1]. */
  scale: (v: number) => number
  ticks: { value: number; label: string }[]
}

/** One chart panel from `top`: title, grid, bar groups, dashed goals. Returns its SVG and height. */
function panel(p: Panel, top: number): { body: string; height: number } {
  const x = (v: number) => LEFT + Math.max(0, Math.min(1, p.scale(v))) * PLOT
  const parts = [
    `<text x="${LEFT}" y="${top + 14}" font-size="13" font-weight="bold">${esc(p.title)}</text>`,
    `<text x="${LEFT}" y="${top + 30}" fill="#4b5563">${esc(p.subtitle)}</text>`
  ]
  let y = top + 44
  const gridTop = y - 6
  for (const g of p.groups) {
    const groupTop = y
    parts.push(`<text x="${LEFT - 8}" y="${y + 11}" text-anchor="end" font-weight="bold">${esc(g.workload)}</text>`)
    for (const b of g.bars) {
      parts.push(
        `<rect x="${LEFT}" y="${y}" width="${(x(b.value) - LEFT).toFixed(1)}" height="${BAR}" fill="${COLORS[b.target]}"><title>${esc(b.tip)}</title></rect>`,
        `<text x="${(x(b.value) + 4).toFixed(1)}" y="${y + 11}">${esc(b.label)}</text>`
      )
      if (Number.isFinite(b.byCpu)) {
        const cx = x(b.byCpu).toFixed(1)
        parts.push(`<line x1="${cx}" x2="${cx}" y1="${y - 2}" y2="${y + BAR + 2}" stroke="#111" stroke-width="2"><title>by CPU per request: ${fmt(b.byCpu, 2)}x</title></line>`)
      }
      y += BAR + 3
    }
    if (g.goal !== undefined) {
      const gx = x(g.goal).toFixed(1)
      parts.push(`<line x1="${gx}" x2="${gx}" y1="${groupTop - 3}" y2="${y}" stroke="#111" stroke-dasharray="4 3"/>`)
    }
    y += 14
  }
  const grid = p.ticks.map(
    (t) => `<line x1="${x(t.value)}" x2="${x(t.value)}" y1="${gridTop}" y2="${y}" stroke="#e5e7eb"/><text x="${x(t.value)}" y="${y + 14}" text-anchor="middle">${t.label}</text>`
  )
  return { body: [...grid, ...parts].join('\n'), height: y + 30 - top }
}

/**
 * The chart of the ratios: throughput relative to bare Fastify for every workload that has a bare
 * Fastify number, and this project's throughput as a multiple of each SDK server's (log scale),
 * each with the issue's target dashed.
 */
export function svg(r: Results): string {
  const present = ORDER.filter((t) => t !== 'bare' && r.measurements.some((m) => m.target === t))
  const relative: Panel = {
    title: 'Throughput relative to bare Fastify (100%)',
    subtitle: 'bar: req/s; black tick: the same ratio from CPU time per request; dashed: the CPU target (the tick right of it)',
    groups: workloads(r)
      .filter((w) => find(r, w, 'bare') !== undefined)
      .map((w) => {
        const bare = find(r, w, 'bare')!
        const bars = ORDER.flatMap((t) => {
          const m = find(r, w, t)
          if (m === undefined || t === 'bare') return []
          // The median of the per-launch ratios, as the verdicts count them (not a ratio of medians).
          const v = median(pairedRatios(m, bare, (x) => x.rps))
          const byCpu = median(pairedRatios(bare, m, (x) => x.cpuUsPerRequest))
          return [{ target: t, value: v, byCpu, label: `${fmt(v * 100, v < 0.1 ? 1 : 0)}%`, tip: `${TARGETS[t]}: ${fmt(m.rps)} req/s` }]
        })
        // A CPU target (ours at most 1.15x bare's CPU per request) is met when the tick is right of 1/1.15.
        const cpu = RATIO_TARGETS[w]?.cpu
        return cpu === undefined ? { workload: w, bars } : { workload: w, bars, goal: 1 / cpu }
      }),
    scale: (v) => v / 1.2,
    ticks: [0, 0.25, 0.5, 0.75, 1, 1.2].map((v) => ({ value: v, label: `${v * 100}%` }))
  }
  const versus: Panel = {
    title: "mcp-pure-http's throughput as a multiple of the SDK servers'",
    subtitle: `log scale; bar: req/s; black tick: from CPU time per request; dashed: the ${SDK_FACTOR}x target`,
    groups: workloads(r).flatMap((w) => {
      const ours = find(r, w, 'ours')
      const bars = SDKS.flatMap((t) => {
        const m = find(r, w, t)
        if (m === undefined || ours === undefined) return []
        const v = median(pairedRatios(ours, m, (x) => x.rps))
        const byCpu = median(pairedRatios(m, ours, (x) => x.cpuUsPerRequest))
        return [{ target: t, value: v, byCpu, label: ratio(v), tip: `${TARGETS[t]}: ${fmt(m.rps)} req/s` }]
      })
      return bars.length === 0 ? [] : [{ workload: w, bars, goal: SDK_FACTOR }]
    }),
    scale: (v) => Math.log10(Math.max(v, 0.1) / 0.1) / 4,
    ticks: [0.1, 1, 10, 100, 1000].map((v) => ({ value: v, label: `${v}x` }))
  }
  let legendX = 20
  const legend = present.map((t) => {
    const item = `<rect x="${legendX}" y="8" width="10" height="10" fill="${COLORS[t]}"/><text x="${legendX + 14}" y="17">${esc(TARGETS[t]!)}</text>`
    legendX += 24 + TARGETS[t]!.length * 6.2
    return item
  })
  const first = panel(relative, 28)
  const second = versus.groups.length === 0 ? { body: '', height: 0 } : panel(versus, 28 + first.height)
  const height = 28 + first.height + second.height + 16
  const meta = `${String(r.meta.date ?? '')} · ${String(r.meta.mode ?? '')} · ${String(r.meta.cpu ?? '')} · ${r.meta.launches === undefined ? '' : `median of ${String(r.meta.launches)} launches, `}best of ${String(r.meta.reps ?? '')} runs`
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    ...legend,
    first.body,
    second.body,
    `<text x="${LEFT}" y="${height - 8}" fill="#6b7280">${esc(meta)}</text>`,
    '</svg>'
  ].join('\n')
}
