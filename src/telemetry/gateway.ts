import { SpanKind, SpanStatusCode, context, defaultTextMapSetter, trace, type Attributes, type TextMapPropagator, type Tracer } from '@opentelemetry/api'
import { UPSTREAM_STATES, Upstream, upstreams, watched } from '../gateway/upstream.js'
import type { Meter } from '@opentelemetry/api'
import { PREFIX } from './metrics.js'
import { errorType } from './store.js'

let current: { tracer: Tracer; propagator: TextMapPropagator } | undefined

/**
 * The gateway's call to its upstream as a CLIENT span, child of the request's span, its context
 * sent on in the upstream request's `params._meta` (`traceparent`, `tracestate`), where the MCP
 * conventions put it. `Upstream.prototype.request` is wrapped once per process, and only when
 * tracing is on; calls outside a traced request pass through unchanged.
 */
export function traceUpstream(tracer: Tracer, propagator: TextMapPropagator): void {
  const patched = current !== undefined
  current = { tracer, propagator }
  if (patched) return
  const request = Upstream.prototype.request
  Upstream.prototype.request = async function traced(this: Upstream, method, params, options) {
    const parent = context.active()
    if (current === undefined || trace.getSpan(parent) === undefined) return request.call(this, method, params, options)
    const target = method === 'tools/call' || method === 'prompts/get' ? params.name : undefined
    const attributes: Attributes = { 'mcp.method.name': method }
    if (method === 'tools/call' && typeof target === 'string') Object.assign(attributes, { 'gen_ai.tool.name': target, 'gen_ai.operation.name': 'execute_tool' })
    if (method === 'prompts/get' && typeof target === 'string') attributes['gen_ai.prompt.name'] = target
    if (typeof params.uri === 'string') attributes['mcp.resource.uri'] = params.uri
    const name = typeof target === 'string' ? `${method} ${target}` : method
    const span = current.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent)
    const carrier: Record<string, string> = {}
    current.propagator.inject(trace.setSpan(parent, span), carrier, defaultTextMapSetter)
    try {
      // The gateway's own requests carry no _meta of their own: the trace context is all of it.
      const result = await request.call(this, method, { ...params, _meta: carrier }, options)
      if (result.isError === true) span.setAttribute('error.type', 'tool_error').setStatus({ code: SpanStatusCode.ERROR })
      return result
    } catch (err) {
      const code = (err as { code?: unknown }).code
      const type = typeof code === 'number' ? String(code) : errorType(err)
      span.setAttribute('error.type', type)
      if (typeof code === 'number') span.setAttribute('rpc.response.status_code', type)
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message })
      throw err
      /* c8 ignore next: no code runs after this catch, which always throws, but V8 counts the continuation (and maps it here) */
    } finally {
      span.end()
    }
  }
}

/**
 * `mcp_pure_http.gateway.upstreams`: for each upstream of this process, 1 for the state it is in
 * and 0 for the others, so that an alert on `state="down"` sees it rise and fall. A closed upstream
 * is reported `closed` once, then forgotten (its series keep that last value).
 */
export function observeUpstreams(meter: Meter): void {
  watched.upstreams = true
  meter.createObservableGauge(`${PREFIX}.gateway.upstreams`, {
    unit: '{upstream}',
    description: 'Upstream MCP servers of the gateway by state: 1 for the state each is in, 0 for the others.'
  }).addCallback((result) => {
    for (const u of upstreams) {
      for (const state of UPSTREAM_STATES) result.observe(u.state === state ? 1 : 0, { [`${PREFIX}.upstream.name`]: u.name, [`${PREFIX}.upstream.state`]: state })
      if (u.state === 'closed') upstreams.delete(u)
    }
  })
}
