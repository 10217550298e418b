import type { Static } from '@sinclair/typebox'
import type { ListKind } from '../core/registry.js'
import type { ListenParamsSchema } from '../schema/subscriptions.js'
import { openEventStream } from './event-stream.js'
import { STREAMED, type RequestId } from './message.js'
import type { Call } from './rpc-methods.js'

type Filter = Static<typeof ListenParamsSchema>['notifications']
type Flag = 'toolsListChanged' | 'promptsListChanged' | 'resourcesListChanged'

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

/** Which filter flag lets a catalogue change through, and the notification it becomes. */
const CHANGE: Record<ListKind, readonly [Flag, string]> = {
  tools: ['toolsListChanged', 'notifications/tools/list_changed'],
  prompts: ['promptsListChanged', 'notifications/prompts/list_changed'],
  resources: ['resourcesListChanged', 'notifications/resources/list_changed'],
  templates: ['resourcesListChanged', 'notifications/resources/list_changed']
}

/**
 * `subscriptions/listen` (2026-07-28): an SSE response that stays open and carries the change
 * notifications the client asked for, each tagged with the subscription id (the request's id). It
 * needs no shared state: the catalogue is this process's own, so any instance can serve a stream.
 * `resourceSubscriptions` (the URIs of resources or templates this server serves; the acknowledgement
 * lists those honoured) brings `notifications/resources/updated` for each `mcp.resourceUpdated(uri)`
 * made in this process: with several instances, on the instance that serves the stream.
 */
export class ListenStreams {
  readonly #open = new Set<() => void>()

  constructor(readonly keepAliveMs: number) {}

  async open(call: Call, filter: Filter): Promise<typeof STREAMED> {
    const { reply, id } = call
    const mcp = call.request.server.mcp
    const agreed: Partial<Record<Flag, true>> & { resourceSubscriptions?: string[] } = {}
    for (const [flag] of Object.values(CHANGE)) if (filter[flag] === true) agreed[flag] = true
    // Only URIs this server serves are honoured; the acknowledgement tells the client which.
    const watched = new Set(filter.resourceSubscriptions?.filter((uri) => mcp.isKnownResource(uri)))
    if (filter.resourceSubscriptions !== undefined) agreed.resourceSubscriptions = [...watched]
    const meta = { [SUBSCRIPTION_ID]: id }
    const { res, send, stopKeepAlive } = openEventStream(call.request, reply, this.keepAliveMs)
    send({ method: 'notifications/subscriptions/acknowledged', params: { _meta: meta, notifications: agreed } })
    const stopChanges = mcp.onChange((kind) => {
      const [flag, method] = CHANGE[kind]
      if (agreed[flag] === true) send({ method, params: { _meta: meta } })
    })
    const stopUpdates =
      watched.size === 0 ? undefined : mcp.watchResources(watched, (uri) => send({ method: 'notifications/resources/updated', params: { uri, _meta: meta } }))
    const stop = () => {
      stopChanges()
      stopUpdates?.()
    }
    const cleanup = () => {
      stop()
      stopKeepAlive()
      this.#open.delete(close)
    }
    const close = () => {
      cleanup()
      send(graceful(id, meta))
      res.end()
    }
    this.#open.add(close)
    // The stream is over, whoever ended it: the connection goes with it, so that a stopping server
    // does not wait out its keep-alive.
    res.once('close', () => {
      cleanup()
      res.destroy()
    })
    return STREAMED
  }

  /** End every stream the way the spec asks of a server that stops: the listen request's result, then the end. */
  closeAll(): void {
    for (const close of [...this.#open]) close()
  }
}

function graceful(id: RequestId, meta: Record<string, RequestId>): object {
  return { id, result: { resultType: 'complete', _meta: meta } }
}
