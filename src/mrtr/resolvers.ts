import { ConfigurationError } from '../errors.js'
import type { RequestContext } from '../core/request-context.js'
import { isQuestion, type Outcome, type Question } from './questions.js'
import { ownValue } from '../core/json-limits.js'
import type { MaybePromise } from '../core/maybe-promise.js'

const RESOLVER = Symbol.for('mcp-pure-http.resolver')

/**
 * A named step that fills a typed value before a handler runs: computed, or asked of the client
 * (return {@link elicit}, {@link sample} or {@link listRoots}). `T` is its value.
 */
export interface Resolver<T> {
  readonly [RESOLVER]: true
  readonly name: string
  readonly needs: Readonly<Record<string, ResolverRef>>
  readonly args: readonly string[] | undefined
  readonly resolve: (args: any, needs: any, ctx: RequestContext) => unknown
  /** Phantom: the value type. */
  readonly value?: T
}

/** A resolver whose consumer wants the whole {@link Outcome} (accept, decline or cancel). */
export interface FullOutcome<T> {
  readonly full: Resolver<T>
}

export type ResolverRef = Resolver<any> | FullOutcome<any>
export type ResolverMap = Record<string, ResolverRef>

/** What a consumer receives for a reference: the value, or the whole outcome with {@link full}. */
export type ValueOf<R> = R extends FullOutcome<infer T> ? Outcome<T> : R extends Resolver<infer T> ? T : never
export type Values<M> = { [K in keyof M]: ValueOf<M[K]> }
type Answer<R> = R extends Question<infer T> ? T : R

/**
 * Define a resolver. `needs` names other resolvers whose values it takes; `args` (optional) lists
 * the tool arguments it reads, checked against the tool's input schema at registration.
 * @example
 * const resolution = resolver({
 *   name: 'resolution',
 *   resolve: (args: { state: string }) =>
 *     args.state === 'Resolved' ? elicit('How was it resolved?', Type.Object({ resolution: Type.String() })) : null
 * })
 */
export function resolver<const N extends ResolverMap = {}, A = any, R = unknown>(def: {
  name: string
  needs?: N
  args?: readonly string[]
  resolve: (args: A, needs: Values<N>, ctx: RequestContext) => R | Promise<R>
}): Resolver<Answer<Awaited<R>>> {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(def.name)) throw new ConfigurationError(`Resolver name "${def.name}" must be 1-64 of A-Z a-z 0-9 _ . -`)
  return { [RESOLVER]: true, name: def.name, needs: def.needs ?? {}, args: def.args, resolve: def.resolve as Resolver<unknown>['resolve'] }
}

/** Ask for a resolver's whole outcome instead of its value: decline and cancel then reach you. */
export function full<T>(r: Resolver<T>): FullOutcome<T> {
  return { full: r }
}

function target(ref: unknown): { resolver: Resolver<unknown>; full: boolean } | undefined {
  if (typeof ref !== 'object' || ref === null) return undefined
  if ((ref as Record<symbol, unknown>)[RESOLVER] === true) return { resolver: ref as Resolver<unknown>, full: false }
  const inner = (ref as FullOutcome<unknown>).full
  return typeof inner === 'object' && inner !== null && (inner as unknown as Record<symbol, unknown>)[RESOLVER] === true
    ? { resolver: inner, full: true }
    : undefined
}

/** A value a consumer takes: under `key`, the outcome of resolver `name`, the plan's step `at`. */
export interface PlanNeed {
  readonly key: string
  readonly name: string
  readonly at: number
  readonly full: boolean
}

export interface PlanStep {
  readonly resolver: Resolver<unknown>
  readonly needs: readonly PlanNeed[]
}

/** The resolvers of one tool, prompt or resource, checked and in dependency order. */
export interface Plan {
  readonly steps: readonly PlanStep[]
  readonly roots: readonly PlanNeed[]
}

/**
 * Check a resolver map at registration: every reference is a resolver, names are unique, `args`
 * are real arguments, and there is no cycle. Returns the steps in an order where needs come first.
 */
export function plan(owner: string, map: ResolverMap, argumentNames: readonly string[] | undefined): Plan {
  const byName = new Map<string, Resolver<unknown>>()
  const steps: PlanStep[] = []
  // 'visiting', then the index of its step once its needs are in place.
  const state = new Map<Resolver<unknown>, 'visiting' | number>()
  const edge = (key: string, ref: unknown, from: string) => {
    const t = target(ref)
    if (t === undefined) throw new ConfigurationError(`${owner}: "${key}" of ${from} is not a resolver`)
    return t
  }
  const visit = (r: Resolver<unknown>, path: string[]) => {
    const seen = state.get(r)
    if (typeof seen === 'number') return
    if (seen === 'visiting') throw new ConfigurationError(`${owner}: resolver cycle ${[...path, r.name].join(' -> ')}`)
    const other = byName.get(r.name)
    if (other !== undefined && other !== r) throw new ConfigurationError(`${owner}: two different resolvers are named "${r.name}"`)
    byName.set(r.name, r)
    for (const a of r.args ?? []) {
      if (argumentNames !== undefined && !argumentNames.includes(a)) {
        throw new ConfigurationError(`${owner}: resolver "${r.name}" reads unknown argument "${a}"`)
      }
    }
    state.set(r, 'visiting')
    const needs = Object.entries(r.needs).map(([key, ref]) => {
      const t = edge(key, ref, `resolver "${r.name}"`)
      visit(t.resolver, [...path, r.name])
      return { key, name: t.resolver.name, at: state.get(t.resolver) as number, full: t.full }
    })
    state.set(r, steps.push({ resolver: r, needs }) - 1)
  }
  const roots = Object.entries(map).map(([key, ref]) => {
    const t = edge(key, ref, owner)
    visit(t.resolver, [])
    return { key, name: t.resolver.name, at: state.get(t.resolver) as number, full: t.full }
  })
  return { steps, roots }
}

/** Raised when a consumer wanted a value the user declined or cancelled. */
export class Declined extends Error {
  override readonly name = 'Declined'
}

export interface Resolution {
  /** Values of the roots, keyed as the owner named them; undefined while questions are pending. */
  values: Record<string, unknown> | undefined
  /** Questions to ask now, by resolver name; undefined when none. */
  pending: Map<string, Question<unknown>> | undefined
}

/**
 * Run a plan for one round. A resolver whose needs are all known runs; a question it returns is
 * answered by a recorded outcome (same name, same digest), by this round's response, or asked now.
 * Independent questions go out together; a question that depends on an answer waits for a later round.
 */
export function runPlan(
  p: Plan,
  args: Record<string, unknown>,
  ctx: RequestContext,
  answerOf: (name: string, q: Question<unknown>) => Outcome<unknown> | undefined
): MaybePromise<Resolution> {
  return new PlanRun(p, args, ctx, answerOf).from(0)
}

/**
 * One round of a plan. Most resolvers answer at once: the plan waits only from the first promise.
 * Outcomes are kept by step; a resolver with a pending question, or one that needs one, is blocked
 * (BLOCKED in its place) and its dependents do not run this round.
 */
class PlanRun {
  readonly #outcomes: (Outcome<unknown> | typeof BLOCKED | undefined)[]
  #pending: Map<string, Question<unknown>> | undefined = undefined

  constructor(
    private readonly plan: Plan,
    private readonly args: Record<string, unknown>,
    private readonly ctx: RequestContext,
    private readonly answerOf: (name: string, q: Question<unknown>) => Outcome<unknown> | undefined
  ) {
    this.#outcomes = new Array(plan.steps.length)
  }

  /** Run the steps from `first` on; a resolver's promise is awaited, its value is not (a microtask less each). */
  from(first: number): MaybePromise<Resolution> {
    const steps = this.plan.steps
    for (let i = first; i < steps.length; i++) {
      const step = steps[i]!
      const r = step.resolver
      const needs = this.#needsOf(step)
      if (needs === BLOCKED) {
        this.#outcomes[i] = BLOCKED
        continue
      }
      const out = r.resolve(r.args === undefined ? this.args : picked(this.args, r.args), needs, this.ctx)
      if (out instanceof Promise) {
        return out.then((value: unknown) => {
          this.#settle(i, r.name, value)
          return this.from(i + 1)
        })
      }
      this.#settle(i, r.name, out)
    }
    if (this.#pending !== undefined) return { values: undefined, pending: this.#pending }
    const values: Record<string, unknown> = {}
    for (const root of this.plan.roots) values[root.key] = this.#take(root)
    return { values, pending: undefined }
  }

  /** What a step's resolver needs, or BLOCKED when one of them waits for an answer. */
  #needsOf(step: PlanStep): Record<string, unknown> | typeof BLOCKED {
    const needs: Record<string, unknown> = {}
    for (const n of step.needs) {
      if (this.#outcomes[n.at] === BLOCKED) return BLOCKED
      needs[n.key] = this.#take(n)
    }
    return needs
  }

  #take(need: PlanNeed): unknown {
    const o = this.#outcomes[need.at] as Outcome<unknown>
    if (need.full) return o
    if (o.action !== 'accept') throw new Declined(`The user chose to ${o.action} "${need.name}"`)
    return o.content
  }

  /** A resolver's value, or its question: answered (recorded, or in this round), else asked now. */
  #settle(at: number, name: string, out: unknown): void {
    if (!isQuestion(out)) {
      this.#outcomes[at] = { action: 'accept', content: out }
      return
    }
    const answer = this.answerOf(name, out)
    if (answer === undefined) {
      ;(this.#pending ??= new Map()).set(name, out)
      this.#outcomes[at] = BLOCKED
    } else {
      this.#outcomes[at] = answer
    }
  }
}

const BLOCKED = Symbol('blocked')

/** The arguments a resolver reads (its `args`), and only those. */
function picked(args: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const input: Record<string, unknown> = {}
  for (const a of names) input[a] = ownValue(args, a)
  return input
}
