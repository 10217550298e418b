import { randomUUID } from 'node:crypto'
import { addAbortListener } from 'node:events'
import { McpHttpError, isTask, type Json, type PureHttpClient } from '../src/client/client.js'
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
  options: { signal?: AbortSignal; onEvent: (line: string) => void; safetyPollMs?: number }
): Promise<Json> {
  const progressToken = randomUUID()
  // A task's end, whoever learns it first (a delivery, or the slow look below), even before we wait.
  const outcomes = new Map<string, { ended: Promise<Json>; end: (task: Json) => void }>()
  const outcome = (id: string) => {
    let o = outcomes.get(id)
    if (o === undefined) {
      let end!: (task: Json) => void
      o = { ended: new Promise<Json>((resolve) => (end = resolve)), end }
      outcomes.set(id, o)
    }
    return o
  }
  const listener = await listenForWebhooks((n) => {
    const p = n.params ?? {}
    const line = (...parts: unknown[]) => options.onEvent(parts.filter((v) => v !== undefined).join(' '))
    if (n.method === 'notifications/progress' && p.progressToken === progressToken) {
      line('progress', [p.progress, p.total].filter((v) => v !== undefined).join('/'), p.message)
    } else if (n.method === 'notifications/tasks') {
      line('task', `${p.taskId}:`, p.status, p.statusMessage)
      if (TERMINAL.has(p.status)) outcome(p.taskId).end(p)
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
    // A slow look at the task as well: a webhook may be disabled meanwhile (its messages then queue
    // on /notifications, which this command does not read).
    const safety = setInterval(() => {
      void client.getTask(id).then((t) => TERMINAL.has(t.status) && outcome(id).end(t), () => undefined)
    }, options.safetyPollMs ?? 3000)
    const ended = await new Promise<Json>((resolve, reject) => {
      void outcome(id).ended.then(resolve)
      // Also when the signal went off before this line (addAbortListener calls at once then).
      const signal = options.signal
      if (signal !== undefined) addAbortListener(signal, () => void client.cancelTask(id).finally(() => reject(signal.reason)))
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
