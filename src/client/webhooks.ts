import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { verifyWebhook } from '../webhooks/sign.js'
import type { CallOptions, Json } from './types.js'

export { verifyWebhook }

/** What these helpers need of a client: its `send` (PureHttpClient has it). */
export interface WebhookClient {
  send(method: string, path: string, options: { body?: unknown; signal?: AbortSignal | undefined }): Promise<{ status: number; headers: Headers; body: any }>
}

/** A registered webhook: `secret` (`whsec_...`) verifies its deliveries, and is shown only now. */
export interface RegisteredWebhook {
  id: string
  url: string
  events?: string[]
  createdAt: string
  secret: string
  status: 'active' | 'disabled'
}

/**
 * `POST /webhooks`: the server pushes this connection's notifications (`events`, or all) to `url`.
 * @example
 * const hook = await registerWebhook(client, 'https://me.example/hooks', ['notifications/tasks'])
 */
export async function registerWebhook(client: WebhookClient, url: string, events?: string[], options: CallOptions = {}): Promise<RegisteredWebhook> {
  return (await client.send('POST', '/webhooks', { body: events === undefined ? { url } : { url, events }, signal: options.signal })).body
}

/** `DELETE /webhooks/{id}`: what it had pending goes back to `GET /notifications`. */
export async function deleteWebhook(client: WebhookClient, id: string, options: CallOptions = {}): Promise<void> {
  await client.send('DELETE', `/webhooks/${encodeURIComponent(id)}`, { signal: options.signal })
}

/** `GET /webhooks`: this connection's webhooks (without their secrets). */
export async function listWebhooks(client: WebhookClient, options: CallOptions = {}): Promise<Json[]> {
  return (await client.send('GET', '/webhooks', { signal: options.signal })).body.webhooks
}

/** A local receiver of deliveries: verified with `secret` once it is set, de-duplicated on `webhook-id`. */
export interface WebhookListener {
  url: string
  /** The secret of the registered webhook; deliveries before it is set are refused (401), and retried by the server. */
  secret: string | undefined
  close(): Promise<void>
}

/**
 * Listen for deliveries on `host:port` (default 127.0.0.1, port 0: any free one). Each verified
 * notification is handed to `onNotification` once, however often it is delivered; a delivery that
 * fails verification is answered 401 and dropped.
 * @example
 * const listener = await listenForWebhooks((n) => console.log(n.method), { port: 8080 })
 * listener.secret = (await client.registerWebhook(listener.url)).secret
 */
export async function listenForWebhooks(
  onNotification: (notification: { method: string; params?: Json }) => void,
  options: { port?: number; host?: string; maxBodyBytes?: number } = {}
): Promise<WebhookListener> {
  const host = options.host ?? '127.0.0.1'
  const max = options.maxBodyBytes ?? 1024 * 1024
  const seen = new Set<string>()
  const close = async () => {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  const listener: WebhookListener = { url: '', secret: undefined, close }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size <= max) chunks.push(c)
    })
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      let note: { method: string; params?: Json }
      try {
        if (listener.secret === undefined || size > max) throw new Error('not now')
        note = verifyWebhook(listener.secret, req.headers, body)
      } catch {
        res.writeHead(401).end()
        return
      }
      res.writeHead(204).end()
      const id = String(req.headers['webhook-id'])
      if (seen.has(id)) return
      seen.add(id)
      onNotification(note)
    })
  })
  server.listen(options.port ?? 0, host)
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  listener.url = `http://${host}:${port}/`
  return listener
}
