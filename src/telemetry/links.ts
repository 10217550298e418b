import { ROOT_CONTEXT, trace, type SpanContext, type TextMapGetter, type TextMapPropagator } from '@opentelemetry/api'

/** Reads a W3C trace context out of `params._meta`: only string values count. */
export const metaGetter: TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const v = carrier[key]
    return typeof v === 'string' ? v : undefined
  }
}

/** A span context as a `traceparent` value (kept in sealed state to link later rounds). */
export function traceparentOf(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`
}

/** The span context a `traceparent` value names, or undefined when it is not a valid one. */
export function spanContextOf(propagator: TextMapPropagator, traceparent: string): SpanContext | undefined {
  const sc = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, { traceparent }, metaGetter))
  return sc !== undefined && trace.isSpanContextValid(sc) ? sc : undefined
}

/**
 * The span contexts of calls that started tasks, by task id, so that each later poll, update or
 * cancel of the task on this instance links to its call. Bounded: the oldest are forgotten first.
 */
export class TaskLinks {
  readonly #calls = new Map<string, SpanContext>()
  constructor(readonly max = 10_000) {}

  set(taskId: string, sc: SpanContext): void {
    if (this.#calls.size >= this.max) this.#calls.delete(this.#calls.keys().next().value!)
    this.#calls.set(taskId, sc)
  }

  get(taskId: string): SpanContext | undefined {
    return this.#calls.get(taskId)
  }
}
