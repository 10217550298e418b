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

export interface PlanStep {
  readonly resolver: Resolver<unknown>
  readonly needs: readonly { key: string; name: string; full: boolean }[]
}

/** The resolvers of one tool, prompt or resource, checked and in dependency order. */
export interface Plan {
  readonly steps: readonly PlanStep[]
  readonly roots: readonly { key: string; name: string; full: boolean }[]
}

/**
 * Check a resolver map at registration: every reference is a resolver, names are unique, `args`
 * are real arguments, and there is no cycle. Returns the steps in an order where needs come first.
 */
export function plan(owner: string, map: ResolverMap, argumentNames: readonly string[] | undefined): Plan {
  const byName = new Map<string, Resolver<unknown>>()
  const steps: PlanStep[] = []
  const state = new Map<Resolver<unknown>, 'visiting' | 'done'>()
  const edge = (key: string, ref: unknown, from: string) => {
    const t = target(ref)
    if (t === undefined) throw new ConfigurationError(`${owner}: "${key}" of ${from} is not a resolver`)
    return t
  }
  const visit = (r: Resolver<unknown>, path: string[]) => {
    const seen = state.get(r)
    if (seen === 'done') return
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
      return { key, name: t.resolver.name, full: t.full }
    })
    state.set(r, 'done')
    steps.push({ resolver: r, needs })
  }
  const roots = Object.entries(map).map(([key, ref]) => {
    const t = edge(key, ref, owner)
    visit(t.resolver, [])
    return { key, name: t.resolver.name, full: t.full }
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
  /** Questions to ask now, by resolver name. */
  pending: Map<string, Question<unknown>>
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

/** One round of a plan. Most resolvers answer at once: the plan waits only from the first promise. */
class PlanRun {
  readonly #outcomes = new Map<string, Outcome<unknown>>()
  readonly #pending = new Map<string, Question<unknown>>()
  readonly #blocked = new Set<string>()

  constructor(
    private readonly plan: Plan,
    private readonly args: Record<string, unknown>,
    private readonly ctx: RequestContext,
    private readonly answerOf: (name: string, q: Question<unknown>) => Outcome<unknown> | undefined
  ) {}

  /** Run the steps from `first` on; a resolver's promise is awaited, its value is not (a microtask less each). */
  from(first: number): MaybePromise<Resolution> {
    const steps = this.plan.steps
    for (let i = first; i < steps.length; i++) {
      const step = steps[i]!
      const r = step.resolver
      if (step.needs.some((n) => this.#blocked.has(n.name))) {
        this.#blocked.add(r.name)
        continue
      }
      const needs: Record<string, unknown> = {}
      for (const n of step.needs) needs[n.key] = this.#take(n)
      const input = r.args === undefined ? this.args : Object.fromEntries(r.args.map((a) => [a, ownValue(this.args, a)]))
      const out = r.resolve(input, needs, this.ctx)
      if (out instanceof Promise) {
        return out.then((value: unknown) => {
          this.#settle(r.name, value)
          return this.from(i + 1)
        })
      }
      this.#settle(r.name, out)
    }
    if (this.#pending.size > 0) return { values: undefined, pending: this.#pending }
    return { values: Object.fromEntries(this.plan.roots.map((root) => [root.key, this.#take(root)])), pending: this.#pending }
  }

  #take(need: { name: string; full: boolean }): unknown {
    const o = this.#outcomes.get(need.name)!
    if (need.full) return o
    if (o.action !== 'accept') throw new Declined(`The user chose to ${o.action} "${need.name}"`)
    return o.content
  }

  /** A resolver's value, or its question: answered (recorded, or in this round), else asked now. */
  #settle(name: string, out: unknown): void {
    if (!isQuestion(out)) {
      this.#outcomes.set(name, { action: 'accept', content: out })
      return
    }
    const answer = this.answerOf(name, out)
    if (answer === undefined) {
      this.#pending.set(name, out)
      this.#blocked.add(name)
    } else {
      this.#outcomes.set(name, answer)
    }
  }
}
