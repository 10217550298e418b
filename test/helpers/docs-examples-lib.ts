/**
 * The checked examples of README.md and docs/*.md (see docs/development.md, "Checked examples").
 *
 * A ` ```console ` block holds commands, each starting with `$ ` (a command continues on the next
 * lines until bash finds it complete), each followed by its answer. Answers are compared with what
 * the command prints against a fresh demo server:
 * - `curl -i` answers: the status line, every header shown (others, like Date, may be left out),
 *   then the body; other answers are a body alone.
 * - A body that is JSON is compared as JSON (key order aside, no key more or less); otherwise line
 *   by line, each line that is JSON as JSON.
 * - In an answer, `<name>` (lower case, digits and `-`) stands for any value without spaces, `…`
 *   for any text. The first `<name>` of a file remembers what it matched: later in that file the
 *   same `<name>` must match the same value, and a command containing `<name>` gets the value.
 */
import { spawnSync } from 'node:child_process'

export interface Command {
  /** 1-based line of the `$ ` in the file. */
  line: number
  text: string
  expected: string
}

export interface Block {
  line: number
  commands: Command[]
}

/** Is this shell text a whole command (bash parses it without reaching the end of input)? */
function complete(text: string): boolean {
  // A `<name>` placeholder is a value once filled in, not a redirection.
  return spawnSync('bash', ['-n'], { input: text.replace(/<([a-z][a-z0-9-]*)>/g, 'x'), encoding: 'utf8' }).status === 0
}

/** The ` ```console ` blocks of a Markdown text, with their commands and answers. */
export function consoleBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n')
  const blocks: Block[] = []
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```console') continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!)
    const commands: (Command & { out: string[] })[] = []
    for (let j = 0; j < body.length; j++) {
      const at = body[j]!
      if (!at.startsWith('$ ')) {
        if (commands.length === 0) throw new Error(`line ${start + j + 2}: a console block starts with a "$ " command`)
        commands.at(-1)!.out.push(at)
        continue
      }
      let text = at.slice(2)
      const line = start + j + 2
      while ((text.endsWith('\\') || !complete(text)) && j + 1 < body.length) text += `\n${body[++j]}`
      commands.push({ line, text, expected: '', out: [] })
    }
    blocks.push({ line: start + 1, commands: commands.map(({ line, text, out }) => ({ line, text, expected: trimEnd(out.join('\n')) })) })
  }
  return blocks
}

const trimEnd = (s: string) => s.replace(/\s+$/, '')

/** Placeholder values remembered across one file. */
export type Bindings = Map<string, string>

const TOKEN = /<([a-z][a-z0-9-]*)>|…/g

/** The command with remembered placeholders filled in. */
export function fill(command: string, bindings: Bindings): string {
  return command.replace(/<([a-z][a-z0-9-]*)>/g, (whole, name: string) => bindings.get(name) ?? whole)
}

/** Match one expected string (with placeholders) against an actual one; binds new names. */
export function matchText(expected: string, actual: string, bindings: Bindings): boolean {
  const names: string[] = []
  let source = '^'
  let last = 0
  for (const m of expected.matchAll(TOKEN)) {
    source += escape(expected.slice(last, m.index))
    const name = m[1]
    if (name === undefined) source += '[\\s\\S]*?'
    else if (bindings.has(name)) source += escape(bindings.get(name)!)
    else if (names.includes(name)) source += `\\k<g${names.indexOf(name)}>`
    else source += `(?<g${names.push(name) - 1}>\\S+?)`
    last = m.index + m[0].length
  }
  const found = new RegExp(`${source}${escape(expected.slice(last))}$`).exec(actual)
  if (found === null) return false
  names.forEach((name, i) => bindings.set(name, found.groups![`g${i}`]!))
  return true
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Deep match of parsed JSON: strings of the expected side may hold placeholders. */
export function matchJson(expected: unknown, actual: unknown, bindings: Bindings, at = ''): string | undefined {
  if (typeof expected === 'string') {
    // A string that is a placeholder alone matches any scalar (a number, say).
    if (/^<[a-z][a-z0-9-]*>$/.test(expected) && actual !== null && typeof actual !== 'object') {
      return matchText(expected, String(actual), bindings) ? undefined : `${at || '/'}: ${JSON.stringify(actual)} is not ${expected}`
    }
    return typeof actual === 'string' && matchText(expected, actual, bindings) ? undefined : `${at || '/'}: ${JSON.stringify(actual)} does not match ${JSON.stringify(expected)}`
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${at || '/'}: ${JSON.stringify(actual)} is not an array of ${expected.length}`
    for (let i = 0; i < expected.length; i++) {
      const bad = matchJson(expected[i], actual[i], bindings, `${at}/${i}`)
      if (bad !== undefined) return bad
    }
    return undefined
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${at || '/'}: ${JSON.stringify(actual)} is not an object`
    const keys = Object.keys(expected).sort().join()
    if (Object.keys(actual).sort().join() !== keys) return `${at || '/'}: keys ${Object.keys(actual).sort().join()} instead of ${keys}`
    for (const [k, v] of Object.entries(expected)) {
      const bad = matchJson(v, (actual as Record<string, unknown>)[k], bindings, `${at}/${k}`)
      if (bad !== undefined) return bad
    }
    return undefined
  }
  return expected === actual ? undefined : `${at || '/'}: ${JSON.stringify(actual)} instead of ${JSON.stringify(expected)}`
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** A body: JSON as JSON, else line by line (each JSON line as JSON). */
function matchBody(expected: string, actual: string, bindings: Bindings): string | undefined {
  const whole = parseJson(expected)
  if (whole.ok && expected.trim() !== '') {
    const got = parseJson(actual)
    return got.ok ? matchJson(whole.value, got.value, bindings) : `not JSON: ${actual.slice(0, 200)}`
  }
  const want = expected.split('\n')
  const got = actual.split('\n')
  if (want.length !== got.length) return `${got.length} lines instead of ${want.length}`
  for (let i = 0; i < want.length; i++) {
    const line = parseJson(want[i]!)
    const bad = line.ok && want[i]!.trim() !== ''
      ? (() => { const g = parseJson(got[i]!); return g.ok ? matchJson(line.value, g.value, bindings) : `line ${i + 1} is not JSON: ${got[i]}` })()
      : matchText(want[i]!, got[i]!, bindings) ? undefined : `line ${i + 1}: ${JSON.stringify(got[i])} does not match ${JSON.stringify(want[i])}`
    if (bad !== undefined) return bad
  }
  return undefined
}

/** Compare what a command printed with the answer shown; undefined when they agree, else why not. */
export function compare(expected: string, printed: string, bindings: Bindings): string | undefined {
  const actual = trimEnd(printed.replace(/\r\n/g, '\n'))
  if (!expected.startsWith('HTTP/')) return matchBody(expected, actual, bindings)
  const [wantHead, ...wantBody] = expected.split('\n\n')
  const [gotHead = '', ...gotBody] = actual.split('\n\n')
  const [wantStatus, ...wantHeaders] = wantHead!.split('\n')
  const [gotStatus = '', ...gotHeaders] = gotHead.split('\n')
  if (!matchText(wantStatus!, gotStatus, bindings)) return `status ${JSON.stringify(gotStatus)} instead of ${JSON.stringify(wantStatus)}`
  const headers = new Map(gotHeaders.map((h) => [h.slice(0, h.indexOf(':')).toLowerCase(), h.slice(h.indexOf(':') + 1).trim()]))
  for (const h of wantHeaders) {
    const name = h.slice(0, h.indexOf(':')).toLowerCase()
    const value = h.slice(h.indexOf(':') + 1).trim()
    const got = headers.get(name)
    if (got === undefined) return `no ${name} header`
    if (!matchText(value, got, bindings)) return `${name}: ${JSON.stringify(got)} does not match ${JSON.stringify(value)}`
  }
  return matchBody(wantBody.join('\n\n'), gotBody.join('\n\n'), bindings)
}
