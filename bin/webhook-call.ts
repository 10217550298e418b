import { randomUUID } from 'node:crypto'
import { McpHttpError, type Json, type PureHttpClient } from '../src/client/client.js'
import { listenForWebhooks } from '../src/client/webhooks.js'

const TERMINAL = new Set(['completed', 'failed', 'cancelled'])

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
    if (n.method === 'notifications/progress' && p.progressToken === progressToken) {
      options.onEvent(`progress ${p.progress}${p.total === undefined ? '' : `/${p.total}`}${p.message === undefined ? '' : `  ${p.message}`}`)
    } else if (n.method === 'notifications/tasks') {
      options.onEvent(`task ${p.taskId}: ${p.status}${p.statusMessage === undefined ? '' : `  ${p.statusMessage}`}`)
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
    if (first.resultType !== 'task') return first
    const id = first.taskId as string
    options.onEvent(`task ${id}: ${first.status}`)
    // The outcome arrives by webhook; Ctrl-C cancels the task on the server, as the polling path does.
    const ended = await new Promise<Json>((resolve, reject) => {
      const check = () => (tasks.has(id) ? resolve(tasks.get(id)!) : undefined)
      wake = check
      options.signal?.addEventListener('abort', () => void client.cancelTask(id).finally(() => reject(options.signal!.reason)), { once: true })
      check()
    })
    if (ended.status === 'completed') return ended.result
    if (ended.status === 'failed') throw new McpHttpError(ended.error?.message ?? 'Task failed', ended.error?.code ?? -32603, 200, ended.error?.data)
    throw new McpHttpError(ended.statusMessage ?? 'Task cancelled', -32800, 200)
  } finally {
    if (hookId !== undefined) await client.deleteWebhook(hookId).catch(() => undefined)
    await listener.close()
  }
}
