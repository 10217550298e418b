import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Tracer } from '@opentelemetry/api'
import type { Store, StoreRoles } from '../store/types.js'
import { overlay } from '../store/compose.js'
import type { Series } from './histogram.js'
import type { Instruments } from './metrics.js'
import { PREFIX } from './metrics.js'

// Not round trips: listeners (they return the function that stops) and the store's own shutdown.
const SKIP = new Set(['constructor', 'onCancel', 'onResourceUpdated', 'close'])
const OPERATION = `${PREFIX}.store.operation`
const MAX_GROUPS = 10_000

const ROLES = ['connections', 'mailbox', 'signals', 'tasks', 'idempotency'] as const satisfies readonly (keyof StoreRoles)[]

/**
 * The store seen through telemetry: every method call of every role is timed
 * (`mcp_pure_http.store.operation.duration`, by method name, errors counted) and, inside an MCP
 * request's span, a child span; queue and task counters follow the calls that change them. Methods
 * run on their role object (its private fields stay reachable); `instanceof` and other properties
 * see through. Made only when telemetry is on.
 */
export function observedStore<S extends Store>(store: S, tracer: Tracer | undefined, m: Instruments): S {
  const redis = store.constructor.name.startsWith('Redis')
  // One object may play two roles (a MemoryStore's connections are its mailbox): wrapped once.
  const seen = new Map<object, object>()
  const roles: Record<string, object> = {}
  for (const name of ROLES) {
    const role = store[name]
    let w = seen.get(role)
    if (w === undefined) seen.set(role, (w = observedRole(role, redis, tracer, m)))
    roles[name] = w
  }
  return overlay(store, roles as Partial<S>)
}

/** One role object seen through telemetry (see {@link observedStore}). */
function observedRole<R extends object>(store: R, redis: boolean, tracer: Tracer | undefined, m: Instruments): R {
  const kind = redis ? SpanKind.CLIENT : SpanKind.INTERNAL
  const system: Attributes = redis ? { 'db.system.name': 'redis' } : {}
  // The size of each group handed out, so that its acknowledgement takes that many off the queue.
  const groups = new Map<string, number>()
  const wrapped = new Map<string, (...args: unknown[]) => unknown>()

  const count = (name: string, args: unknown[], value: unknown): void => {
    switch (name) {
      case 'pushNotification': m.notificationsQueued.add(1); break
      case 'takeNotifications': {
        const group = value as { id: string; notifications: unknown[] } | undefined
        if (group === undefined) break
        if (groups.size >= MAX_GROUPS) groups.delete(groups.keys().next().value!)
        groups.set(group.id, group.notifications.length)
        break
      }
      case 'ackNotifications': {
        const size = groups.get(args[1] as string)
        if (value === true && size !== undefined) m.notificationsQueued.add(-size)
        groups.delete(args[1] as string)
        break
      }
      case 'enqueueRequest': m.requestsQueued.add(1); break
      case 'completeRequest': if (value === true) m.requestsQueued.add(-1); break
      case 'createTask': m.tasks.add(1, { [`${PREFIX}.task.status`]: (args[1] as { status: string }).status }); break
      case 'updateTask': {
        const status = (args[2] as { status?: string }).status
        if (status !== undefined && value !== undefined) m.tasks.add(1, { [`${PREFIX}.task.status`]: status })
        break
      }
      case 'finishIdempotent': m.replayBytes.add(Buffer.byteLength(args[2] as string)); break
    }
  }

  const wrap = (name: string, fn: (...args: unknown[]) => unknown) => {
    let succeeded: Series | undefined
    return function observed(...args: unknown[]): unknown {
      const started = performance.now()
      const parent = context.active()
      const span = tracer !== undefined && trace.getSpan(parent) !== undefined
        ? tracer.startSpan(`store ${name}`, { kind, attributes: { [OPERATION]: name, ...system } }, parent)
        : undefined
      const done = (err: unknown, value?: unknown): void => {
        let series: Series
        if (err !== undefined) {
          const type = errorType(err)
          const attributes: Attributes = { [OPERATION]: name, 'error.type': type }
          m.storeErrors.add(1, attributes)
          series = m.storeDuration.add(`${name}\0${type}`, attributes)
          span?.setAttribute('error.type', type).setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message })
        } else {
          count(name, args, value)
          series = succeeded ??= m.storeDuration.add(name, { [OPERATION]: name })
        }
        series.record((performance.now() - started) / 1000)
        span?.end()
      }
      let result: unknown
      try {
        result = fn.apply(store, args)
      } catch (err) {
        done(err)
        throw err
      }
      if (!(result instanceof Promise)) {
        done(undefined, result)
        return result
      }
      return result.then(
        (value) => {
          done(undefined, value)
          return value
        },
        (err: unknown) => {
          done(err)
          throw err
        }
      )
    }
  }

  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown
      if (typeof key !== 'string' || typeof value !== 'function') return value
      let w = wrapped.get(key)
      if (w === undefined) {
        const fn = value as (...args: unknown[]) => unknown
        // Listeners and close are not timed, but still run on the store itself (its private fields).
        w = SKIP.has(key) ? fn.bind(target) : wrap(key, fn)
        wrapped.set(key, w)
      }
      return w
    }
  })
}

/** A low-cardinality name of what was thrown: a stable code when it has one, else its class. */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code === 'string' && code !== '') return code
  return err instanceof Error ? err.constructor.name : '_OTHER'
}
