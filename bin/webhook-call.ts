import { randomUUID } from 'node:crypto'
import { McpHttpError, isTask, type Json, type PureHttpClient } from '../src/client/client.js'
import { listenForWebhooks } from '../src/client/webhooks.js'

const TERMINAL = new Set(['completed', 'failed', 'cancelled'])
const SAFETY_POLL_MS = 3000

/**
 * `mcp-http --webhook <port> call ...`: listen on 127.0.0.1:<port>, register it as a webhook for
 * progress and task status, call the tool, and report what arrives (`onEvent`) instead of polling.
 * The webhook is deleted when the call ends, however it ends. The server must allow the address
 * (`MCP_WEBHOOK_ALLOWED_HOSTS=127.0.0.1:<port>`).
 */
export async function callWithWebhook(
  client: PureHttpClient,
  name: string,
  args: Json,
  port: number,
  options: { signal?: AbortSignal; onEvent: (line: string) => void }
): Promise<Json> {
  const progressToken = randomUUID()
  const tasks = new Map<string, Json>()
  let wake = () => {}
  const listener = await listenForWebhooks((n) => {
    const p = n.params ?? {}
    const line = (...parts: unknown[]) => options.onEvent(parts.filter((v) => v !== undefined).join(' '))
    if (n.method === 'notifications/progress' && p.progressToken === progressToken) {
      line('progress', [p.progress, p.total].filter((v) => v !== undefined).join('/'), p.message)
    } else if (n.method === 'notifications/tasks') {
      line('task', `${p.taskId}:`, p.status, p.statusMessage)
      if (TERMINAL.has(p.status)) tasks.set(p.taskId, p)
      wake()
    }
  }, { port })
  let hookId: string | undefined
  try {
    const hook = await client.registerWebhook(listener.url, ['notifications/progress', 'notifications/tasks'], { signal: options.signal })
    hookId = hook.id
    listener.secret = hook.secret
    const first = await client.callTool(name, args, { signal: options.signal, meta: { progressToken }, task: { notify: true }, wait: false })
    if (!isTask(first)) return first
    const id = first.taskId
    options.onEvent(`task ${id}: ${first.status}`)
    // The outcome arrives by webhook; Ctrl-C cancels the task on the server, as the polling path does.
    // A slow look at the task as well: tasks/cancel by another party changes the status without a
    // notifications/tasks today, and a webhook may be disabled meanwhile (its messages then queue).
    const safety = setInterval(() => {
      void client.getTask(id).then((t) => (TERMINAL.has(t.status) ? (tasks.set(id, t), wake()) : undefined), () => undefined)
    }, SAFETY_POLL_MS)
    const ended = await new Promise<Json>((resolve, reject) => {
      const check = () => (tasks.has(id) ? resolve(tasks.get(id)!) : undefined)
      wake = check
      options.signal?.addEventListener('abort', () => void client.cancelTask(id).finally(() => reject(options.signal!.reason)), { once: true })
      check()
    }).finally(() => clearInterval(safety))
    if (ended.status === 'completed') return ended.result
    // The Tasks extension: a failed task carries its JSON-RPC error, a cancelled one says why.
    if (ended.status === 'failed') throw new McpHttpError(ended.error.message, ended.error.code, 200, ended.error.data)
    throw new McpHttpError(`Task cancelled: ${ended.statusMessage}`, -32800, 200)
  } finally {
    if (hookId !== undefined) await client.deleteWebhook(hookId).catch(() => undefined)
    await listener.close()
  }
}
