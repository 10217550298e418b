import type { Static } from '@sinclair/typebox'
import type { McpServer } from '../core/mcp-server.js'
import type { ListKind } from '../core/registry.js'
import type { EventStream } from '../http/event-stream.js'
import type { ListenParamsSchema } from '../schema/subscriptions.js'

export type ListenFilter = Static<typeof ListenParamsSchema>['notifications']
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
 * `subscriptions/listen` (2026-07-28), for both faces: on a stream the face opened, the change
 * notifications the client asked for, each tagged with the subscription id (the request's id). It
 * needs no shared state: the catalogue is this process's own, so any instance can serve a stream.
 * `resourceSubscriptions` (the URIs of resources or templates this server serves; the acknowledgement
 * lists those honoured) brings `notifications/resources/updated` for each `mcp.resourceUpdated(uri)`
 * made in this process: with several instances, on the instance that serves the stream.
 */
export class ListenStreams {
  readonly #open = new Set<() => void>()

  /** `keepAliveMs`: how often the face's stream sends a keep-alive comment while quiet. */
  constructor(readonly keepAliveMs: number) {}

  open(mcp: McpServer, id: string | number, filter: ListenFilter, stream: EventStream): void {
    const { res, send, stopKeepAlive } = stream
    const agreed: Partial<Record<Flag, true>> & { resourceSubscriptions?: string[] } = {}
    for (const [flag] of Object.values(CHANGE)) if (filter[flag] === true) agreed[flag] = true
    // Only URIs this server serves are honoured; the acknowledgement tells the client which.
    const watched = new Set(filter.resourceSubscriptions?.filter((uri) => mcp.isKnownResource(uri)))
    if (filter.resourceSubscriptions !== undefined) agreed.resourceSubscriptions = [...watched]
    const meta = { [SUBSCRIPTION_ID]: id }
    send({ method: 'notifications/subscriptions/acknowledged', params: { _meta: meta, notifications: agreed } })
    const stopChanges = mcp.onChange((kind) => {
      const [flag, method] = CHANGE[kind]
      if (agreed[flag] === true) send({ method, params: { _meta: meta } })
    })
    const stopUpdates =
      watched.size === 0 ? undefined : mcp.watchResources(watched, (uri) => send({ method: 'notifications/resources/updated', params: { uri, _meta: meta } }))
    const cleanup = () => {
      stopChanges()
      stopUpdates?.()
      stopKeepAlive()
      this.#open.delete(close)
    }
    // The spec's ending by a server that stops: the listen request's result, then the end.
    const close = () => {
      cleanup()
      stream.result({ resultType: 'complete', _meta: meta })
      res.end()
    }
    this.#open.add(close)
    // The stream is over, whoever ended it: the connection goes with it, so that a stopping server
    // does not wait out its keep-alive.
    res.once('close', () => {
      cleanup()
      res.destroy()
    })
  }

  /** End every stream the way the spec asks of a server that stops. */
  closeAll(): void {
    for (const close of [...this.#open]) close()
  }
}
