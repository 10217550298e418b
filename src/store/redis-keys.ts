import { digest } from '../hash.js'

/*
 * Every Redis key and channel name of a RedisStore and of its companions, here and nowhere else: the
 * TypeScript builds them with the functions below, and the Lua scripts get theirs from the same
 * constants (the scripts are template strings that interpolate `PART`, `KIND` and `TAG_AT`, so a
 * script's text, and its SHA-1, are what they were when the names were literals).
 *
 * Shapes (P the prefix, h the SHA-1 of an owner, so that no owner id can spell another's key):
 *   P c:{h}            a logical connection's hash; its parts P c:{h}<PART>: subs, nq, nqb, rq, rm, rs
 *   P a:{h}:<id>       the answer to a server-to-client request (on the connection's slot)
 *   P w:{h}            wake-up channel of that slot; P w:{h:<id>} of one task's or record's slot
 *   P u:{sha1(uri)}    the connections subscribed to a URI
 *   P t:{h:<taskId>}   a task's hash; parts in, ans
 *   P i:{h:<reqId>}    an idempotency record
 *   P {g}:<name>       the registry slot: conns, sess (+ s:<id> each session), clock, and the
 *                      ledgers tasks and idem with their parts b, u, r, o:<h>, r:<h>, and leases
 *                      (tasks that asked for notifications, by lease: JSON [owner, taskId])
 *   P bus:{0..15}      the bus channels (cancellations, resource updates)
 *   P gw:<instance>    the gateway's round relay (P gw:reply:<uuid> for outcomes)
 *   P once:<sha1>      a single-use key (a DPoP proof id), SET NX PX: one key, its own slot
 *   P rl:...           the rate limiter's counters (@fastify/rate-limit names them under this)
 *   P {wh}:<name>      the webhooks' schedule: sched, gen, owners
 *   P {who:<h>}:hooks  an owner's webhooks; P {wh:<id>}:<part> a webhook's due, msgs, leases, bytes, log
 *
 * Each script is called with one key, KEYS[1], which places it on its slot; what else it touches
 * it derives from KEYS[1] inside the script, as a part appended after the hash tag (so on the same
 * slot by construction), rather than receiving it in KEYS[]:
 * - dynamic names, known only inside the script: a ledger's per-owner sets `o:<h>` and `r:<h>`
 *   (a sweep drops the expired records of whichever owners they belong to), the session key of
 *   the least recently used session (evicted by ZPOPMIN), the answer key of a request discarded to
 *   make room (mcpEnqueue picks it);
 * - fixed parts of a connection or task (subs, nq, rq, ...): passing them would add up to six keys
 *   to every call of the hottest scripts (mcpPush, mcpTake, mcpEnqueue), each one more bulk string
 *   to send and parse, to name what KEYS[1] already determines.
 */

/** The parts of a connection's, a task's and a ledger's keys, appended to its key (after the hash tag). */
export const PART = {
  subs: ':subs',
  notifications: ':nq',
  notificationBytes: ':nqb',
  requestOrder: ':rq',
  requestMessages: ':rm',
  requestStates: ':rs',
  inputRequests: ':in',
  answers: ':ans',
  ledgerBytes: ':b',
  ledgerUsage: ':u',
  ledgerRunning: ':r',
  ledgerOwner: ':o:',
  ledgerRunningOwner: ':r:'
} as const

/** The kind before a slotted key's hash tag: `P <kind>{...}`. */
export const KIND = { connection: 'c:', answer: 'a:', wake: 'w:', uri: 'u:', task: 't:', idempotency: 'i:' } as const

/** The registry: its hash tag, and the names on it. */
export const REGISTRY = { tag: '{g}:', connections: 'conns', sessions: 'sess', session: 's:', clock: 'clock', tasks: 'tasks', idempotency: 'idem', leases: 'leases' } as const

/** Where a slotted key's hash tag starts, counted from the end of the prefix (Lua's 1-based string.sub): `P c:{h}` -> `{h}`. */
export const TAG_AT = KIND.connection.length + 1

export const sha1 = (s: string): string => digest('sha1', s, 'hex')

// Owners' digests, as every key of an owner needs one (a task costs four): the same few principals
// make most requests. Bounded; emptied when full rather than kept in order (a miss costs one digest).
const OWNER_TAGS = new Map<string, string>()
const MAX_OWNER_TAGS = 4096

/** {@link sha1} of an owner id, remembered for the owners seen last (ids of up to 256 characters: at most ~1 MB). */
export function ownerTag(owner: string): string {
  if (owner.length > 256) return sha1(owner)
  let tag = OWNER_TAGS.get(owner)
  if (tag === undefined) {
    if (OWNER_TAGS.size >= MAX_OWNER_TAGS) OWNER_TAGS.clear()
    tag = sha1(owner)
    OWNER_TAGS.set(owner, tag)
  }
  return tag
}

/**
 * The names under one prefix.
 * @example
 * const keys = new RedisKeys('mcp:')
 * keys.conn('alice') // 'mcp:c:{522b276a356bdf39013dfabea2cd43e141ecc9e8}'
 */
export class RedisKeys {
  constructor(readonly prefix: string) {
    // A brace in the prefix would become the hash tag of every key: one slot for everything.
    if (/[{}]/.test(prefix)) throw new Error(`RedisStore: the prefix must not contain { or }: ${JSON.stringify(prefix)}`)
  }

  /** A logical connection's hash `P c:{h}`, or one of its parts. */
  conn(owner: string, part: '' | (typeof PART)[keyof typeof PART] = ''): string {
    return `${this.prefix}${KIND.connection}{${ownerTag(owner)}}${part}`
  }

  /** The answer to request `id` of `owner`, on the connection's slot. */
  answer(owner: string, id: string): string {
    return `${this.prefix}${KIND.answer}{${ownerTag(owner)}}:${id}`
  }

  /** The wake-up channel of a connection's slot. */
  connWake(owner: string): string {
    return `${this.prefix}${KIND.wake}{${ownerTag(owner)}}`
  }

  /** The connections subscribed to a URI, on the URI's slot. */
  uri(uri: string): string {
    return `${this.prefix}${KIND.uri}{${sha1(uri)}}`
  }

  /** A registry key (one slot for the deployment): `conns`, `sess`, `tasks`, `idem`. */
  registry(name: string): string {
    return `${this.prefix}${REGISTRY.tag}${name}`
  }

  /**
   * A record of an owner on its own slot (a task, an idempotency record): its key, its ledger
   * member, and the wake-up channel of that slot.
   */
  record(kind: 'task' | 'idempotency', owner: string, id: string): { key: string; member: string; channel: string } {
    const member = `${ownerTag(owner)}:${id}`
    return { key: `${this.prefix}${KIND[kind]}{${member}}`, member, channel: `${this.prefix}${KIND.wake}{${member}}` }
  }

  /** Bus channel `n` (see redis-bus.ts). */
  bus(n: number): string {
    return `${this.prefix}bus:{${n}}`
  }

  /** Where the bus channels' names start (to tell them from wake-ups). */
  get busPrefix(): string {
    return `${this.prefix}bus:`
  }

  /** The gateway's relay: the channel of an instance, and a sender's reply channel. */
  relay(instance: string): string {
    return `${this.prefix}gw:${instance}`
  }

  relayReply(id: string): string {
    return `${this.prefix}gw:reply:${id}`
  }

  /**
   * The webhooks' keys (their Lua is in src/webhooks/redis-scripts.ts, which takes every key as
   * KEYS): on the `{wh}` slot the schedule of webhooks with work (`sched`), its generations (`gen`)
   * and the webhook -> owner index (`owners`).
   */
  get webhookSchedule(): { sched: string; gen: string; owners: string } {
    const tag = `${this.prefix}{wh}`
    return { sched: `${tag}:sched`, gen: `${tag}:gen`, owners: `${tag}:owners` }
  }

  /** An owner's webhooks (one hash), on the owner's `{who:<h>}` slot. */
  webhooks(owner: string): string {
    return `${this.prefix}{who:${ownerTag(owner)}}:hooks`
  }

  /** One webhook's pending deliveries (due, msgs, leases, bytes) and its attempts log, on its `{wh:<id>}` slot. */
  webhookDeliveries(id: string): { due: string; msgs: string; leases: string; bytes: string; log: string } {
    const tag = `${this.prefix}{wh:${id}}`
    return { due: `${tag}:due`, msgs: `${tag}:msgs`, leases: `${tag}:leases`, bytes: `${tag}:bytes`, log: `${tag}:log` }
  }

  /** A single-use key (see `OnceKeys`): hashed, so that any caller's key is a short name. */
  once(key: string): string {
    return `${this.prefix}once:${sha1(key)}`
  }

  /** The rate limiter's namespace (`@fastify/rate-limit` appends its own names). */
  get rateLimit(): string {
    return `${this.prefix}rl:`
  }
}
