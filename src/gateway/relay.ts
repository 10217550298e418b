import { randomUUID } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { asError, errors } from '../errors.js'
import { RedisKeys } from '../store/redis-keys.js'
import type { Outcome, RoundRef } from './call.js'

/** A client's retry, sent to the instance whose upstream request it answers. */
export interface RelayedRound {
  ref: RoundRef
  responses: Record<string, Record<string, unknown>>
  /** The retrying request's client capabilities (the next round may ask what it cannot answer). */
  caps: Readonly<Record<string, unknown>> | undefined
  /** Whose retry it is: the holder checks it against the call's caller. */
  principal: string
}

/**
 * How a round reaches the instance holding its upstream request: answer in, outcome back. One
 * process: {@link MemoryRelay}. Several instances: {@link RedisRelay}, on the store's Redis.
 */
export interface RoundRelay {
  /** Take the rounds sent to `instance`; resolves once listening, with the function that stops. */
  serve(instance: string, handle: (round: RelayedRound) => Promise<Outcome>): Promise<() => Promise<void>>
  /**
   * Send a round to `instance` and wait for its outcome (as long as the upstream takes, until
   * `signal` aborts). Rejects when no instance of that name listens.
   */
  send(instance: string, round: RelayedRound, signal: AbortSignal): Promise<Outcome>
  /** Stop listening and release what the relay holds (not the store's connection). */
  close?(): Promise<void>
}

// The call's upstream request lived on that instance and ended with it: only a new call can go on.
const gone = () => errors.invalidParams('Invalid or expired requestState: the gateway instance that held this call is gone, and the call with it; call again')

/** Instances in one process (tests, several mounts): a map of handlers. */
export class MemoryRelay implements RoundRelay {
  readonly #handlers = new Map<string, (round: RelayedRound) => Promise<Outcome>>()

  async serve(instance: string, handle: (round: RelayedRound) => Promise<Outcome>): Promise<() => Promise<void>> {
    this.#handlers.set(instance, handle)
    return async () => void this.#handlers.delete(instance)
  }

  /** As {@link RedisRelay.send}: a sender whose signal aborts stops waiting; the holder goes on. */
  async send(instance: string, round: RelayedRound, signal: AbortSignal): Promise<Outcome> {
    const handle = this.#handlers.get(instance)
    if (handle === undefined) throw gone()
    const outcome = handle(structuredClone(round))
    if (signal.aborted) throw asError(signal.reason)
    let onAbort!: () => void
    const aborted = new Promise<never>((_resolve, reject) => signal.addEventListener('abort', (onAbort = () => reject(asError(signal.reason))), { once: true }))
    try {
      return await Promise.race([outcome, aborted])
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }
}

interface Envelope {
  id: string
  /** The channel the outcome goes to. */
  reply: string
  round: RelayedRound
}

/**
 * Rounds over Redis pub/sub (classic PUBLISH: on a Redis Cluster every node carries it, which is
 * fine for the rare relayed round; sharded pub/sub is not needed here): each instance listens on `<prefix>gw:<instance>`; the outcome comes
 * back on the sender's own reply channel. Publishing on the command connection (the store's); a
 * subscribed connection can do nothing else, so listening takes a duplicate of it.
 */
export class RedisRelay implements RoundRelay {
  readonly #redis: Redis | Cluster
  readonly #keys: RedisKeys
  readonly #sub: Redis | Cluster
  readonly #replyChannel: string
  readonly #waiting = new Map<string, (outcome: Outcome) => void>()
  readonly #handlers = new Map<string, (round: RelayedRound) => Promise<Outcome>>()
  readonly #ready: Promise<unknown>

  constructor(redis: Redis | Cluster, prefix: string) {
    const keys = new RedisKeys(prefix)
    this.#redis = redis
    this.#keys = keys
    // Both clients can duplicate themselves; TypeScript cannot call a union of the two signatures.
    this.#sub = (redis as Redis).duplicate()
    this.#sub.on('error', () => undefined)
    this.#replyChannel = keys.relayReply(randomUUID())
    this.#sub.on('message', (channel: string, text: string) => this.#message(channel, text))
    this.#ready = this.#sub.subscribe(this.#replyChannel)
  }

  #message(channel: string, text: string): void {
    if (channel === this.#replyChannel) {
      const { id, outcome } = JSON.parse(text) as { id: string; outcome: Outcome }
      this.#waiting.get(id)?.(outcome)
      return
    }
    const handle = this.#handlers.get(channel)!
    const { id, reply, round } = JSON.parse(text) as Envelope
    void handle(round).then((outcome) => this.#redis.publish(reply, JSON.stringify({ id, outcome })))
  }

  async serve(instance: string, handle: (round: RelayedRound) => Promise<Outcome>): Promise<() => Promise<void>> {
    const channel = this.#keys.relay(instance)
    this.#handlers.set(channel, handle)
    await this.#ready
    await this.#sub.subscribe(channel)
    return async () => {
      this.#handlers.delete(channel)
      await this.#sub.unsubscribe(channel)
    }
  }

  async send(instance: string, round: RelayedRound, signal: AbortSignal): Promise<Outcome> {
    await this.#ready
    const id = randomUUID()
    const outcome = new Promise<Outcome>((resolve, reject) => {
      this.#waiting.set(id, resolve)
      signal.addEventListener('abort', () => reject(asError(signal.reason)), { once: true })
    })
    // Rejected after the wait has ended (nobody listened): nothing to report.
    outcome.catch(() => undefined)
    try {
      const envelope: Envelope = { id, reply: this.#replyChannel, round }
      const heard = await this.#redis.publish(this.#keys.relay(instance), JSON.stringify(envelope))
      // Nobody listens: the instance holding the upstream request is gone, and the request with it.
      if (heard === 0) throw gone()
      return await outcome
    } finally {
      this.#waiting.delete(id)
    }
  }

  /** Close the subscriber connection (the command connection is the store's). */
  async close(): Promise<void> {
    this.#sub.disconnect()
  }
}
