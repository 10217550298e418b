/** Elicitation as a terminal form: one question per field, each answer checked against the field's rules. */
import type { Interface } from 'node:readline/promises'
import { McpHttpError, type Json } from '../src/client/client.js'
import { interrupt, terminal } from './terminal.js'

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/
const DATE = /^\d{4}-\d{2}-\d{2}$/

/** The typed value of an answer, or why the field's schema refuses it. */
export function check(field: Json, raw: string): { value: unknown } | { problem: string } {
  let value: unknown = raw
  if (field.type === 'boolean') {
    if (/^(y|yes|true)$/i.test(raw)) return { value: true }
    if (/^(n|no|false)$/i.test(raw)) return { value: false }
    return { problem: 'answer y or n' }
  }
  if (field.type === 'number' || field.type === 'integer') {
    const n = Number(raw)
    if (!Number.isFinite(n)) return { problem: 'must be a number' }
    if (field.type === 'integer' && !Number.isInteger(n)) return { problem: 'must be a whole number' }
    if (typeof field.minimum === 'number' && n < field.minimum) return { problem: `must be at least ${field.minimum}` }
    if (typeof field.maximum === 'number' && n > field.maximum) return { problem: `must be at most ${field.maximum}` }
    value = n
  } else {
    if (typeof field.minLength === 'number' && [...raw].length < field.minLength) return { problem: `must be at least ${field.minLength} characters` }
    if (typeof field.maxLength === 'number' && [...raw].length > field.maxLength) return { problem: `must be at most ${field.maxLength} characters` }
    if (typeof field.pattern === 'string' && !new RegExp(field.pattern, 'u').test(raw)) return { problem: `must match ${field.pattern}` }
    const format = formatProblem(field.format, raw)
    if (format !== undefined) return { problem: format }
  }
  if (Array.isArray(field.enum) && !field.enum.includes(value)) return { problem: `must be one of ${field.enum.join(', ')}` }
  return { value }
}

function formatProblem(format: unknown, raw: string): string | undefined {
  if (format === 'email' && !EMAIL.test(raw)) return 'must be an email address'
  if (format === 'uri' && !URL.canParse(raw)) return 'must be a URI (scheme:...)'
  if (format === 'date' && !DATE.test(raw)) return 'must be a date (YYYY-MM-DD)'
  if (format === 'date-time' && Number.isNaN(Date.parse(raw))) return 'must be a date and time (YYYY-MM-DDTHH:MM:SSZ)'
  return undefined
}

/** One answer; `undefined` when the input closed (Ctrl-D). Ctrl-C rejects, through `interrupt`. */
function answer(rl: Interface, question: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const closed = () => resolve(undefined)
    rl.once('close', closed)
    rl.question(question, { signal: interrupt.signal }).then(
      (text) => ((rl.off('close', closed), resolve(text))),
      (err: unknown) => ((rl.off('close', closed), reject(err)))
    )
  })
}

/**
 * Ask the form in the terminal. `:decline` at any field answers `decline` (the user refuses),
 * `:cancel` or Ctrl-D answers `cancel` (the user dismissed it); Ctrl-C still stops the whole command.
 */
export async function askInTerminal(params: Json): Promise<Json> {
  if (process.stdin.isTTY !== true) {
    throw new McpHttpError(`The server asks: "${params.message}", but stdin is not a terminal; pass the values as arguments or run mcp-http in a terminal`, -32600, 0)
  }
  const rl = terminal()
  try {
    process.stderr.write(`${params.message}\n  (:decline to refuse, :cancel or Ctrl-D to dismiss)\n`)
    const schema = params.requestedSchema as { properties: Record<string, Json>; required?: string[] }
    const content: Json = {}
    for (const [key, field] of Object.entries(schema.properties)) {
      const required = schema.required?.includes(key) === true
      const label = field.title ?? key
      const hint = [field.description, field.enum ? `one of ${(field.enum as string[]).join(', ')}` : field.type === 'boolean' ? 'y/n' : undefined].filter(Boolean).join('; ')
      for (;;) {
        const raw = (await answer(rl, `  ${label}${hint ? ` (${hint})` : ''}${required ? '' : ' [optional]'}: `))?.trim()
        if (raw === undefined || raw === ':cancel') return { action: 'cancel' }
        if (raw === ':decline') return { action: 'decline' }
        if (raw === '' && !required) break
        const checked = raw === '' ? { problem: 'is required' } : check(field, raw)
        if ('problem' in checked) {
          process.stderr.write(`  ${label} ${checked.problem}.\n`)
          continue
        }
        content[key] = checked.value
        break
      }
    }
    return { action: 'accept', content }
  } finally {
    rl.close()
  }
}
