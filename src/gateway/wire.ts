import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { errors } from '../errors.js'
import { isPlainObject } from '../headers.js'
import type { Cancel } from '../core/cancel.js'
import { UpstreamAnswer } from './errors.js'
import { StdioChild } from './stdio.js'

interface Waiting {
  method: string
  resolve: ((result: Record<string, unknown>) => void) | undefined
  reject: ((err: unknown) => void) | undefined
  cancel: Cancel | undefined
  onAbort: ((reason: Error) => void) | undefined
}

/**
 * The gateway's requests on a connection the SDK's `Client` opened (it did `initialize`, and still
 * answers the upstream's own requests and hears its notifications): sent on its transport with ids
 * of ours, and their answers taken off the transport before the `Client` sees them. The `Client`
 * sends nothing after `initialize` (id 0), so the ids (from 1) are ours alone. An answer is checked
 * for what the gateway needs (a result object, or an error with a code and a message) and is
 * otherwise the upstream's, as it said it; the SDK validated each against its schemas, and its
 * `request` cost the gateway more than the rest of a call's bookkeeping.
 */
export class Wire {
  #next = 1
  readonly #waiting = new Map<number, Waiting>()

  constructor(
    readonly transport: Transport,
    readonly name: string
  ) {
    const take = (message: unknown): boolean => this.#take(message)
    if (transport instanceof StdioChild) transport.take = take
    else {
      // Set by the Client's connect.
      const deliver = transport.onmessage!
      transport.onmessage = (message, extra) => {
        if (!take(message)) deliver(message, extra)
      }
    }
    const closed = transport.onclose
    transport.onclose = () => {
      const lost = errors.upstreamClosed(name)
      for (const waiting of this.#waiting.values()) this.#settle(waiting, undefined, lost)
      this.#waiting.clear()
      closed?.()
    }
  }

  /** Requests waiting for their answer. */
  get size(): number {
    return this.#waiting.size
  }

  /**
   * Send a request; its result, or the upstream's error answer ({@link UpstreamAnswer}), or the
   * upstream closed (502). `cancel` aborting: the upstream is told `notifications/cancelled`, and the
   * promise rejects with an Error of its reason.
   */
  request(method: string, params: Record<string, unknown>, cancel?: Cancel): Promise<Record<string, unknown>> {
    if (cancel?.aborted === true) return Promise.reject(new Error(String(cancel.reason)))
    const id = this.#next++
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { method, resolve, reject, cancel, onAbort: undefined }
      if (cancel !== undefined) {
        // Removed when the request settles: it fires only while the request waits.
        waiting.onAbort = (reason) => {
          this.#waiting.delete(id)
          this.#settle(waiting, undefined, new Error(String(reason)))
          const cancelled = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: String(reason) } } as const
          this.transport.send(cancelled).catch(() => undefined)
        }
        cancel.on(waiting.onAbort)
      }
      this.#waiting.set(id, waiting)
      this.transport.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage).catch((err: unknown) => {
        if (this.#waiting.delete(id)) this.#settle(waiting, undefined, err)
      })
    })
  }

  /** An answer to one of ours: settled here (true); anything else is the Client's. */
  #take(message: unknown): boolean {
    if (!isPlainObject(message) || message.method !== undefined) return false
    // The SDK matched ids as numbers ("3" answering 3): servers that did so keep working.
    const id = typeof message.id === 'number' ? message.id : typeof message.id === 'string' ? Number(message.id) : NaN
    const waiting = this.#waiting.get(id)
    if (waiting === undefined) return false
    this.#waiting.delete(id)
    const { result, error } = message
    if (isPlainObject(result)) this.#settle(waiting, result)
    else if (isPlainObject(error) && Number.isInteger(error.code) && typeof error.message === 'string') {
      this.#settle(waiting, undefined, new UpstreamAnswer(error.code as number, error.message, error.data))
    } else {
      const what = result === undefined && error === undefined ? 'neither a result nor an error' : error === undefined ? 'a result that is not an object' : 'a malformed error'
      this.#settle(waiting, undefined, errors.upstreamBadAnswer(`The upstream server ${this.name} answered ${waiting.method} with ${what}`))
    }
    return true
  }

  #settle(waiting: Waiting, result: Record<string, unknown> | undefined, err?: unknown): void {
    const { resolve, reject, cancel, onAbort } = waiting
    // Deleted from #waiting, the entry may stay in that Map's previous table until the next full
    // collection (see UpstreamCall's end): it keeps nothing of the request's from here on.
    waiting.resolve = waiting.reject = waiting.cancel = waiting.onAbort = undefined
    if (onAbort !== undefined) cancel!.off(onAbort)
    if (result !== undefined) resolve!(result)
    else reject!(err)
  }
}
