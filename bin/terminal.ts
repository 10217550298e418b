/** The terminal side of mcp-http: a typed model reply for sampling, a spinner, Ctrl-C (forms: form.ts). */
import { createInterface } from 'node:readline/promises'
import { McpHttpError, type Json } from '../src/client/client.js'

/** Ctrl-C: aborts what runs (the signal handler, or a terminal form that has the keyboard). */
export const interrupt = new AbortController()

export function contentText(content: Json[]): string {
  return content.map((c) => (c.type === 'text' ? c.text : `(${c.type})`)).join('\n')
}

/** A spinner line for tasks, on a terminal only. */
export function progress(): { update: (task: Json) => void; done: () => void } {
  if (process.stdout.isTTY !== true) return { update: () => {}, done: () => {} }
  const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏'
  let i = 0
  return {
    update: (task) => process.stdout.write(`\r\x1b[2K${frames[i++ % frames.length]} task ${task.taskId}: ${task.status}${task.statusMessage ? ` (${task.statusMessage})` : ''}`),
    done: () => process.stdout.write('\r\x1b[2K')
  }
}

/** A readline on the terminal; Ctrl-C there (the terminal is in raw mode) interrupts like SIGINT. */
export function terminal() {
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  rl.on('SIGINT', () => interrupt.abort(new Error('Interrupted')))
  return rl
}

/** Sampling with a human for the model: the conversation is shown, the reply typed. */
export async function sampleInTerminal(params: Json): Promise<Json> {
  if (process.stdin.isTTY !== true) {
    throw new McpHttpError('The server asks for a model reply (sampling), but stdin is not a terminal to type one; run mcp-http in a terminal', -32600, 0)
  }
  const rl = terminal()
  try {
    process.stderr.write('The server asks for a model reply (sampling/createMessage).\n')
    if (typeof params.systemPrompt === 'string') process.stderr.write(`  [system] ${params.systemPrompt}\n`)
    for (const m of params.messages as Json[]) process.stderr.write(`  [${m.role}] ${contentText([m.content])}\n`)
    const text = await rl.question('  Model reply: ', { signal: interrupt.signal })
    return { role: 'assistant', content: { type: 'text', text }, model: 'mcp-http (typed in the terminal)', stopReason: 'endTurn' }
  } finally {
    rl.close()
  }
}
