import { context, trace, type TextMapPropagator } from '@opentelemetry/api'
import type { McpServer } from '../core/mcp-server.js'
import { isPlainObject } from '../headers.js'
import { servedBy, type Served } from './hooks.js'
import { spanContextOf, traceparentOf, type TaskLinks } from './links.js'
import { PREFIX } from './metrics.js'
import { copyOf } from '../core/results.js'

// Keys of the sealed state between MRTR rounds: the first round's span and the round's number.
const ORIGIN = 'otel.tp'
const ROUND = 'otel.n'

const served = (): Served | undefined => servedBy(trace.getSpan(context.active()))

/**
 * What only the core knows, told to the request's span: a tool's `isError` (the conventions'
 * `tool_error`), the kind of result (complete, input_required, task), the task a call started,
 * and, through the sealed `requestState`, the call an MRTR round belongs to (a span link on every
 * later round, whichever instance serves it). Wraps the methods of this one McpServer.
 */
export function observeCore(mcp: McpServer, propagator: TextMapPropagator, tasks: TaskLinks): void {
  const outcome = (result: unknown): void => {
    const s = served()
    if (s === undefined || !isPlainObject(result)) return
    if (result.isError === true) s.errorType ??= 'tool_error'
    if (typeof result.resultType === 'string') s.span?.setAttribute(`${PREFIX}.result_type`, result.resultType)
    if (result.resultType === 'task' && typeof result.taskId === 'string') {
      s.span?.setAttribute(`${PREFIX}.task.id`, result.taskId)
      if (s.span !== undefined) tasks.set(result.taskId, s.span.spanContext())
    }
  }
  // One promise more per call at most, not two (an async wrapper's own and its await's): with
  // traces on, every promise also pays the context manager's hooks on Node 20.
  const told = <T>(result: T): T => {
    outcome(result)
    return result
  }
  const callTool = mcp.callTool.bind(mcp)
  mcp.callTool = (name, body, ctx) => {
    // A call answered at once (the core's fast path) stays at once.
    const result = callTool(name, body, ctx)
    return result instanceof Promise ? result.then(told) : told(result)
  }
  const getPrompt = mcp.getPrompt.bind(mcp)
  mcp.getPrompt = (name, body, ctx) => getPrompt(name, body, ctx).then(told)
  const readResource = mcp.readResource.bind(mcp)
  mcp.readResource = (uri, params, ctx) => readResource(uri, params, ctx).then(told)

  const sealer = mcp.sealer
  const seal = sealer.seal.bind(sealer)
  sealer.seal = (binding, data, ttlMs) => {
    const s = served()
    const sc = s?.span?.spanContext()
    if (s === undefined || sc === undefined || !isPlainObject(data)) return seal(binding, data, ttlMs)
    const traced = copyOf(data)
    traced[ORIGIN] = s.origin ?? traceparentOf(sc)
    traced[ROUND] = (s.round ?? 1) + 1
    return seal(binding, traced, ttlMs)
  }
  const open = sealer.open.bind(sealer)
  sealer.open = (token, binding, log) => {
    const data = open(token, binding, log)
    const s = served()
    if (s === undefined || !isPlainObject(data) || typeof data[ORIGIN] !== 'string') return data
    s.origin = data[ORIGIN]
    if (typeof data[ROUND] === 'number') s.round = data[ROUND]
    const call = spanContextOf(propagator, s.origin)
    if (call !== undefined) s.span?.addLink({ context: call, attributes: { [`${PREFIX}.link`]: 'mrtr' } })
    if (s.round !== undefined) s.span?.setAttribute(`${PREFIX}.mrtr.round`, s.round)
    return data
  }
}
